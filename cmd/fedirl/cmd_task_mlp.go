package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// mlpTaskFlags are the flags of "fedirl server task create --mlp-weights".
type mlpTaskFlags struct {
	weights    bool
	hidden     []int
	activation string
	init       string
}

// register adds the mlp-weights task's flags to cmd.
func (f *mlpTaskFlags) register(cmd *cobra.Command) {
	tf := cmd.Flags()
	tf.BoolVar(&f.weights, "mlp-weights", false, `build an "mlp-weights" task (FedAvg of reward networks' weights, fedirl client --learner mlp) for networks on --env's (s, e_a) input`)
	tf.IntSliceVar(&f.hidden, "net-hidden", nil, "with --mlp-weights: the reward network's hidden widths, e.g. 32 or 64,64 (default 32)")
	tf.StringVar(&f.activation, "net-activation", "", "with --mlp-weights: the hidden layers' activation, tanh or relu (default tanh)")
	tf.StringVar(&f.init, "net-init", "", "with --mlp-weights: the shared initialisation every client starts round 1 from, a reward network file (fedirl client --distill-out's format) of the task's shape or a JSON array of its weights (exclusive with --seed, which draws one; neither: each client starts from its own seed's)")
}

// apply makes spec an mlp-weights task from the flags, when --mlp-weights
// is given; the --net-* flags without it are refused.
func (f *mlpTaskFlags) apply(cmd *cobra.Command, env string, seed uint64, spec *federation.TaskSpec) error {
	fl := cmd.Flags()
	if !f.weights {
		for _, name := range []string{"net-hidden", "net-activation", "net-init"} {
			if fl.Changed(name) {
				return fmt.Errorf("--%s is a setting of an mlp-weights task: give --mlp-weights (and --env) with it", name)
			}
		}
		return nil
	}
	switch {
	case !fl.Changed("env"):
		return errors.New("--mlp-weights needs --env: the network's input is that simulator's (s, e_a)")
	case fl.Changed("gridworld-size") || fl.Changed("lattice"):
		return errors.New("--mlp-weights (a task on networks' weights) has no lattice: leave --gridworld-size and --lattice out")
	case fl.Changed("net-init") && fl.Changed("seed"):
		return errors.New("--net-init (a shared initialisation from a file) and --seed (one drawn from a seed) are exclusive: give one, or neither for independent initialisations")
	}
	if err := checkEnvClient(env, -1); err != nil {
		return err
	}
	e, err := registry.Make(env, -1, nil, 0)
	if err != nil {
		return fmt.Errorf("--env %s: %w", env, err)
	}
	obs, act := e.ObservationSpace(), e.ActionSpace()
	net := sampleirl.NetConfig{Activation: f.activation}
	if fl.Changed("net-hidden") {
		net.Hidden = append([]int{}, f.hidden...)
	}
	if fl.Changed("net-activation") && f.activation != "tanh" && f.activation != "relu" {
		return fmt.Errorf("--net-activation %q: want tanh or relu", f.activation)
	}
	if fl.Changed("net-hidden") && len(f.hidden) == 0 {
		return errors.New("--net-hidden: no widths; want one per hidden layer, e.g. 32 or 64,64 (leave the flag out for 32)")
	}
	resolved, err := net.Resolve()
	if err != nil {
		return fmt.Errorf("--net-hidden %v: %w", f.hidden, err)
	}
	var init []float64
	var initSeed *uint64
	if fl.Changed("seed") {
		initSeed = &seed
	}
	if f.init != "" {
		if init, err = readNetInit(f.init, env, obs, act, resolved); err != nil {
			return err
		}
	}
	probe, dim, err := tasks.MLPWeightsTaskProbe(env, obs, act, net, init, initSeed)
	if err != nil {
		return fmt.Errorf("--mlp-weights: %w", err)
	}
	spec.EnvFamily, spec.Probe, spec.ThetaDim = tasks.MLPWeightsFamilyName, probe, dim
	return nil
}

// readNetInit reads --net-init: a reward network file of the task's shape
// on env's spaces, or a JSON array of weights (its length is checked with
// the probe).
func readNetInit(path, env string, obs, act envs.Space, net sampleirl.NetConfig) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--net-init: %w", err)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		var w []float64
		if err := json.Unmarshal(t, &w); err != nil {
			return nil, fmt.Errorf("--net-init %s: a JSON array of weights: %w", path, jsonError(b, err))
		}
		return w, nil
	}
	r, file, err := sampleirl.DecodeRewardNet(b, path, obs, act)
	if err != nil {
		return nil, fmt.Errorf("--net-init (a reward network file on %s's spaces, or a JSON array of weights): %w", env, err)
	}
	if file.Env != "" && file.Env != env {
		return nil, fmt.Errorf("--net-init %s: a network for %s, and the task's --env is %s", path, file.Env, env)
	}
	if !slices.Equal(r.Config.Hidden, net.Hidden) || r.Config.Activation != net.Activation {
		return nil, fmt.Errorf("--net-init %s: a network of hidden %v, %s; the task's is hidden %v, %s: give --net-hidden and --net-activation of the file's shape, or another file",
			path, r.Config.Hidden, r.Config.Activation, net.Hidden, net.Activation)
	}
	return r.Weights(), nil
}
