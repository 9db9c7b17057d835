package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/bipedal"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
	"github.com/fedirl/fedirl/pkg/envs/registry"
)

func newEnvCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Inspect, step and render the simulators (Pendulum-v1, CartPole-v1, Acrobot-v1, LunarLander-v3, LunarLanderContinuous-v3, BipedalWalker-v3, BipedalWalkerHardcore-v3)",
		Long: `env gives direct access to fedirl's Gymnasium-compatible simulators, so that
their trajectories can be compared with Gymnasium's step by step.

  fedirl env list
  fedirl env rollout --env Pendulum-v1 --state 0.3,-0.5 --actions 1.5,-2,3`,
	}
	cmd.AddCommand(newEnvRolloutCmd(), newEnvListCmd(), newEnvEpisodesCmd(), newEnvRenderCmd())
	return cmd
}

// checkEnvClient checks an environment name first (blaming --env) and then a
// client index (blaming --client): 0..envs.MaxClient, or -1 for the
// environment's default physics.
func checkEnvClient(name string, client int) error {
	if !slices.Contains(registry.Names(), name) {
		return fmt.Errorf("--env %q: unknown environment (known: %s)", name, strings.Join(registry.Names(), ", "))
	}
	if client == -1 {
		return nil
	}
	if err := envs.CheckClient(client); err != nil {
		return fmt.Errorf("--client %d: %w (or -1 for the default environment)", client, err)
	}
	return nil
}

// envRolloutStep is one JSON line of "fedirl env rollout".
type envRolloutStep struct {
	Step       int       `json:"step"`
	Action     []float64 `json:"action,omitempty"`
	Obs        []float64 `json:"obs"`
	Reward     *float64  `json:"reward,omitempty"`
	Terminated bool      `json:"terminated"`
	Truncated  bool      `json:"truncated"`
	State      []float64 `json:"state,omitempty"`
}

func newEnvRolloutCmd() *cobra.Command {
	var (
		name, stateFlag, actionsFlag, out string
		params                            []string
		client                            int
		seed, noiseSeed                   uint64
		strict                            bool
	)
	cmd := &cobra.Command{
		Use:   "rollout --env NAME [--param k=v ...] [--client i] [--state s0,s1,..] --actions FILE|LIST",
		Short: "Step an environment through a fixed action sequence and print each step as JSON Lines",
		Long: `rollout starts an environment from --state (or from Reset(--seed) without it),
applies the actions in order and prints one JSON object per line: first step 0
with the initial observation and state, then for each step
  {"step", "action", "obs", "reward", "terminated", "truncated", "state"}.
It stops when the episode terminates or is truncated (TimeLimit).

--actions is either a file or an inline list. Inline: comma-separated values for
one-dimensional actions ("0,1,1,0" or "1.5,-2"), or semicolon-separated vectors.
A file holds one action per line (values separated by commas or spaces; blank
lines and lines starting with # are skipped) or a JSON array of numbers or of
arrays. Discrete actions must be integers in range; Box actions outside the
bounds are clipped as Gymnasium does, unless --strict-actions makes them an error.

--param overrides a named physical parameter (see "fedirl env list"); with
--client i the paper's client-i parameters are the base, and observation noise
N(0, (0.005 i)²) is drawn from a source seeded with --noise-seed.

The state layout per environment (for --state and the "state" field):
  Pendulum-v1  theta, theta_dot                       (theta = 0 upright)
  CartPole-v1  x, x_dot, theta, theta_dot
  Acrobot-v1   theta1, theta2, theta1_dot, theta2_dot (theta1 = 0 hanging down)
(one naming for every environment: Gymnasium's CartPole names, <angle>_dot for
a velocity; LunarLander's and BipedalWalker's states are Box2D's and cannot be set.)
Observations are float64 (Gymnasium rounds them to float32).`,
		Example: `  fedirl env rollout --env CartPole-v1 --state 0.01,-0.02,0.03,0.04 --actions 1,0,1,1
  fedirl env rollout --env Pendulum-v1 --param g=11.81 --state 1,-0.3 --actions torques.txt
  fedirl env rollout --env Acrobot-v1 --client 3 --seed 7 --actions 2,2,0,1 --out run.jsonl
  fedirl env rollout --env BipedalWalker-v3 --client 2 --param friction=1.5 --actions "0.5,0,-0.5,0;1,1,1,1"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkEnvClient(name, client); err != nil {
				return err
			}
			p, err := parseEnvParams(params)
			if err != nil {
				return err
			}
			var e envs.Env
			var st classic.Stateful // nil for an environment whose state cannot be set
			if slices.Contains(lunar.Names(), name) || slices.Contains(bipedal.Names(), name) {
				if stateFlag != "" {
					return fmt.Errorf("--state: %s's Box2D state cannot be set; start from Reset(--seed)", name)
				}
				be, err := registry.Make(name, client, p, seed)
				if err != nil {
					return fmt.Errorf("--param: %w", err)
				}
				e = be
			} else {
				if client >= 0 {
					base, err := classic.ClientParams(name, client)
					if err != nil {
						return fmt.Errorf("--client: %w", err)
					}
					for k, v := range p {
						base[k] = v // unknown names are reported by MakeWithParams
					}
					p = base
				}
				st, err = classic.MakeWithParams(name, p)
				if err != nil {
					return fmt.Errorf("--param: %w", err)
				}
				st.SetNoiseSeed(noiseSeed)
				e = st
			}
			stateOf := func() []float64 {
				if st == nil {
					return nil
				}
				return st.State(nil)
			}
			actions, err := parseEnvActions(actionsFlag, e.ActionSpace().Dim())
			if err != nil {
				return err
			}
			space := e.ActionSpace()
			for k, a := range actions {
				if err := classic.CheckAction(space, a); err != nil {
					return fmt.Errorf("--actions: action %d (%v): %w", k+1, a, err)
				}
				if strict && !space.IsDiscrete() {
					for j, v := range a {
						if v < space.Low[j] || v > space.High[j] {
							return fmt.Errorf("--actions: action %d value %v outside [%v, %v] (--strict-actions)", k+1, v, space.Low[j], space.High[j])
						}
					}
				}
			}

			var obs []float64
			if stateFlag != "" {
				s, err := parseFloatList(stateFlag, ",")
				if err != nil {
					return fmt.Errorf("--state: %w", err)
				}
				st.Reset(seed) // seeds the observation noise for this episode
				if err := st.SetState(s); err != nil {
					return fmt.Errorf("--state: %w", err)
				}
				obs = st.Observe()
			} else {
				obs = e.Reset(seed)
			}

			w, closeOut, err := createOutput(out)
			if err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			defer closeOut() // on error paths; the success path reports the close error below
			bw := bufio.NewWriter(w)
			enc := json.NewEncoder(bw)
			if err := enc.Encode(envRolloutStep{Step: 0, Obs: obs, State: stateOf()}); err != nil {
				return err
			}
			done := 0
			for k, a := range actions {
				obs, r, term, trunc := e.Step(a)
				rec := envRolloutStep{Step: k + 1, Action: a, Obs: obs, Reward: &r, Terminated: term, Truncated: trunc, State: stateOf()}
				if err := enc.Encode(rec); err != nil {
					return fmt.Errorf("writing step %d: %w", k+1, err)
				}
				done = k + 1
				if term || trunc {
					break
				}
			}
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
			if err := closeOut(); err != nil {
				return err
			}
			if done < len(actions) {
				fmt.Fprintf(os.Stderr, "fedirl env rollout: episode ended at step %d; %d remaining actions ignored\n", done, len(actions)-done)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "env", "Pendulum-v1", "environment id: "+strings.Join(registry.Names(), ", "))
	f.StringArrayVar(&params, "param", nil, "parameter override k=v (repeatable, or comma-separated k=v,k2=v2); see 'fedirl env list'")
	f.IntVar(&client, "client", -1, fmt.Sprintf("use the paper's client-i perturbation (appendix Setups), i counted from 0 (0..%d), as the base parameters (-1: the default environment)", envs.MaxClient))
	f.StringVar(&stateFlag, "state", "", "initial internal state, comma-separated (default: Reset(--seed))")
	f.StringVar(&actionsFlag, "actions", "", "actions: a file, or an inline list (see --help)")
	f.Uint64Var(&seed, "seed", 0, "episode seed for Reset (initial state and observation noise)")
	f.Uint64Var(&noiseSeed, "noise-seed", 0, "seed of the observation-noise source (matters only with noise)")
	f.BoolVar(&strict, "strict-actions", false, "reject Box actions outside the action bounds instead of clipping them")
	f.StringVar(&out, "out", "", "output JSON Lines file (default stdout)")
	_ = cmd.MarkFlagRequired("actions")
	return cmd
}

// parseEnvParams parses "k=v" flags (each may hold several comma-separated pairs).
func parseEnvParams(flags []string) (map[string]float64, error) {
	p := map[string]float64{}
	for _, fl := range flags {
		for _, kv := range strings.Split(fl, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("--param %q: want name=value", kv)
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("--param %q: value: %w", kv, err)
			}
			p[strings.TrimSpace(k)] = x
		}
	}
	return p, nil
}

// parseFloatList parses a sep-separated list of floats.
func parseFloatList(s, sep string) ([]float64, error) {
	var out []float64
	for i, f := range strings.Split(s, sep) {
		f = strings.TrimSpace(f)
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("value %d %q: not a number", i+1, f)
		}
		out = append(out, x)
	}
	return out, nil
}

// parseEnvActions reads --actions: a file if one exists at that path, else an inline list.
func parseEnvActions(arg string, dim int) ([][]float64, error) {
	if arg == "" {
		return nil, errors.New("--actions: empty")
	}
	b, err := os.ReadFile(arg)
	if err == nil {
		acts, err := parseActionText(string(b), dim)
		if err != nil {
			return nil, fmt.Errorf("--actions file %s: %w", arg, err)
		}
		return acts, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--actions file %s: %w", arg, err)
	}
	var acts [][]float64
	if strings.Contains(arg, ";") || dim > 1 {
		for i, vec := range strings.Split(arg, ";") {
			a, err := parseFloatList(vec, ",")
			if err != nil {
				return nil, fmt.Errorf("--actions (no such file, read as a list): action %d: %w", i+1, err)
			}
			if len(a) != dim {
				return nil, fmt.Errorf("--actions: action %d has %d values, want %d", i+1, len(a), dim)
			}
			acts = append(acts, a)
		}
		return acts, nil
	}
	vals, err := parseFloatList(arg, ",")
	if err != nil {
		return nil, fmt.Errorf("--actions (no such file, read as a list): %w", err)
	}
	for _, v := range vals {
		acts = append(acts, []float64{v})
	}
	return acts, nil
}

// parseActionText parses an actions file: a JSON array, or one action per line.
func parseActionText(text string, dim int) ([][]float64, error) {
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "[") {
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(trimmed), &raw); err != nil {
			return nil, fmt.Errorf("JSON: %w", err)
		}
		acts := make([][]float64, 0, len(raw))
		for i, r := range raw {
			var x float64
			if err := json.Unmarshal(r, &x); err == nil {
				acts = append(acts, []float64{x})
			} else {
				var v []float64
				if err := json.Unmarshal(r, &v); err != nil {
					return nil, fmt.Errorf("JSON element %d: want a number or an array of numbers", i)
				}
				acts = append(acts, v)
			}
			if len(acts[i]) != dim {
				return nil, fmt.Errorf("JSON element %d has %d values, want %d", i, len(acts[i]), dim)
			}
		}
		return acts, nil
	}
	var acts [][]float64
	for ln, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(fields) != dim {
			return nil, fmt.Errorf("line %d: %d values, want %d", ln+1, len(fields), dim)
		}
		a := make([]float64, dim)
		for j, f := range fields {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a number", ln+1, f)
			}
			a[j] = x
		}
		acts = append(acts, a)
	}
	return acts, nil
}

func newEnvListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the environments, their parameters (with defaults) and the client perturbations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list := registry.List()
			if asJSON {
				return writeJSON("", list)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			for _, info := range list {
				fmt.Fprintf(w, "%s\t%s\n", info.Name, info.Summary)
				for _, p := range info.Params {
					fmt.Fprintf(w, "  %s\t%s\t%s\n", p.Name, formatDefault(p.Default), p.Doc)
				}
				fmt.Fprintf(w, "  client i:\t\t%s\n\n", strings.TrimPrefix(info.Client, "client i: "))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func formatDefault(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 10, 64)
}

func init() {
	rootCmd.AddCommand(newEnvCmd())
}
