package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// episodeLine is one line of "fedirl env episodes".
type episodeLine struct {
	Episode    int     `json:"episode"`
	Return     float64 `json:"return"`
	Length     int     `json:"length"`
	Terminated bool    `json:"terminated"`
	Truncated  bool    `json:"truncated"`
}

// episodesSummary is the closing line.
type episodesSummary struct {
	Summary    bool           `json:"summary"`
	Env        string         `json:"env"`
	Policy     string         `json:"policy"`
	Episodes   int            `json:"episodes"`
	Return     report.Summary `json:"return"`
	MeanLength float64        `json:"mean_length"`
	Terminated int            `json:"terminated"`
	Truncated  int            `json:"truncated"`
}

// newEnvEpisodesCmd builds "fedirl env episodes".
func newEnvEpisodesCmd() *cobra.Command {
	var (
		name, policy, demosOut string
		params                 []string
		client                 int
		episodes               int
		seed                   uint64
	)
	cmd := &cobra.Command{
		Use:   "episodes",
		Short: "Run N episodes of a policy and print one JSON line per episode and a summary",
		Long: `Runs --episodes episodes of an environment (any of "fedirl env list", with
--client and --param as in "fedirl env rollout") under a policy and prints one
JSON line per episode (episode, return, length, terminated, truncated) and a
closing summary line (mean ± std return, mean length, how many terminated or
were truncated). Episode k resets with seed --seed + k.

With --demos-out FILE the episodes are also written as demonstrations for
"fedirl client --learner sample": JSON Lines, one episode per line, in the
environment's own spaces ({"obs": [o₀, …, o_T], "actions": [a₀, …, a_{T−1}],
"terminated": …}; a Discrete action as [index]), written when every episode
has run (the file appears whole or not at all).

` + policyDoc,
		Example: `  fedirl env episodes --env LunarLanderContinuous-v3 --policy heuristic --episodes 100
  fedirl env episodes --env LunarLanderContinuous-v3 --client 5 --policy random --episodes 2000 --seed 1
  fedirl env episodes --env CartPole-v1 --policy runs/cartpole/policy.json --episodes 20
  fedirl env episodes --env Pendulum-v1 --client 3 --policy runs/pendulum/policy.json --episodes 20 --demos-out demos.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if episodes < 1 {
				return fmt.Errorf("--episodes %d: want ≥ 1", episodes)
			}
			if demosOut == "-" {
				return fmt.Errorf("--demos-out -: stdout carries the episode lines; give a file")
			}
			e, choose, reset, err := envWithPolicy(name, client, params, policy, seed)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			var rets []float64
			var demos []sampleirl.Trajectory
			sum := episodesSummary{Summary: true, Env: name, Policy: policy, Episodes: episodes}
			for k := range episodes {
				obs := e.Reset(seed + uint64(k))
				reset()
				line := episodeLine{Episode: k}
				tr := sampleirl.Trajectory{Obs: [][]float64{slices.Clone(obs)}}
				for {
					a := choose(obs)
					o, r, term, trunc := e.Step(a)
					if demosOut != "" {
						tr.Obs, tr.Actions = append(tr.Obs, slices.Clone(o)), append(tr.Actions, slices.Clone(a))
					}
					obs = o
					line.Return += r
					line.Length++
					if term || trunc {
						line.Terminated, line.Truncated = term, trunc
						break
					}
				}
				if demosOut != "" {
					tr.Terminated = line.Terminated
					demos = append(demos, tr)
				}
				if err := enc.Encode(line); err != nil {
					return err
				}
				rets = append(rets, line.Return)
				sum.MeanLength += float64(line.Length) / float64(episodes)
				if line.Terminated {
					sum.Terminated++
				}
				if line.Truncated {
					sum.Truncated++
				}
			}
			sum.Return = report.Summarize(rets)
			if demosOut != "" {
				var b bytes.Buffer
				if err := sampleirl.WriteTrajectories(&b, demos); err != nil {
					return fmt.Errorf("--demos-out %s: %w", demosOut, err)
				}
				if err := report.WriteFile(demosOut, b.Bytes()); err != nil {
					return fmt.Errorf("--demos-out: %w", err)
				}
			}
			return enc.Encode(sum)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "env", "LunarLanderContinuous-v3", "environment id (see fedirl env list)")
	f.StringVar(&policy, "policy", "random", "random, zero, heuristic or a PPO checkpoint file")
	f.StringArrayVar(&params, "param", nil, "k=v parameter override (repeatable)")
	f.IntVar(&client, "client", -1, fmt.Sprintf("the paper's client i, counted from 0 (0..%d; -1: the default environment)", envs.MaxClient))
	countVar(f, &episodes, "episodes", 10, "episodes", "number of episodes")
	f.Uint64Var(&seed, "seed", 0, "first episode's reset seed (and the random policy's stream)")
	f.StringVar(&demosOut, "demos-out", "", "also write the episodes to this file as demonstrations (JSON Lines in the environment's spaces, for fedirl client --learner sample)")
	return cmd
}

// checkPolicySpaces refuses a checkpoint made for other observation or
// action spaces, naming both environments (trained is "" when the
// checkpoint's run folder does not say) and both spaces.
func checkPolicySpaces(p *ppo.Policy, e envs.Env, env, trained string) error {
	obs := e.ObservationSpace().Dim()
	if p.Action.N == e.ActionSpace().N && p.Action.Dim() == e.ActionSpace().Dim() && p.ObsDim == obs {
		return nil
	}
	from := "another environment"
	if trained != "" {
		from = trained
	}
	return fmt.Errorf("the checkpoint was trained on %s (actions %s, %d observations) and %s has actions %s and %d observations: give a checkpoint trained on %s (fedirl ppo train --env %s)",
		from, spaceText(p.Action), p.ObsDim, env, spaceText(e.ActionSpace()), obs, env, env)
}

// spaceText is Gymnasium's name of a space: Discrete(n) or Box(dim).
func spaceText(s envs.Space) string {
	if s.N > 0 {
		return fmt.Sprintf("Discrete(%d)", s.N)
	}
	return fmt.Sprintf("Box(%d)", s.Dim())
}

// trainedOn reads the environment a checkpoint was trained on from the
// config.json that "fedirl ppo train" writes beside it ("" if none).
func trainedOn(policy string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(policy), "config.json"))
	if err != nil {
		return ""
	}
	var c struct {
		Env string `json:"env"`
	}
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	return c.Env
}
