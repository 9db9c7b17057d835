package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// The local learners of "fedirl client --learner".
const (
	learnerMaxEnt = "maxent"
	learnerSample = "sample"
)

// learnerFlags lists the flags that belong to one learner, with what each
// is for that learner, so that the other learner can refuse them by name.
var learnerFlags = map[string][][2]string{
	learnerMaxEnt: {
		{"mdp", "the client's lattice MDP"},
		{"solver", "the lattice MDP's infinite-horizon solver"},
		{"submit-reward", "a reward on the lattice probe from the client's own features"},
	},
	learnerSample: {
		{"env", "the client's simulator"},
		{"client", "the simulator's physics, the paper's client i"},
		{"param", "a physical parameter of the simulator"},
		{"sample-config", "the sample-based learner's settings"},
		{"seed", "the seed of PPO and the sampled episodes"},
	},
}

// checkLearnerFlags refuses an unknown --learner, and every flag given
// explicitly that belongs to the other learner, naming the flag and what
// it is for.
func checkLearnerFlags(cmd *cobra.Command, learner string) error {
	var other string
	switch learner {
	case learnerMaxEnt:
		other = learnerSample
	case learnerSample:
		other = learnerMaxEnt
	default:
		return fmt.Errorf("--learner %q: want %q (MaxEnt IRL on a lattice MDP, --mdp) or %q (sample-based MaxEnt IRL in a simulator, --env)", learner, learnerMaxEnt, learnerSample)
	}
	for _, fl := range learnerFlags[other] {
		if flagChanged(cmd, fl[0]) {
			return fmt.Errorf("--%s (%s) belongs to --learner %s, and this client runs --learner %s: leave --%s out, or run --learner %s",
				fl[0], fl[1], other, learner, fl[0], other)
		}
	}
	return nil
}

// sampleClientFlags holds the flags of "fedirl client --learner sample".
type sampleClientFlags struct {
	env, config string
	client      int
	params      []string
	seed        uint64
}

// register adds the sample learner's flags to cmd.
func (f *sampleClientFlags) register(cmd *cobra.Command) {
	cf := cmd.Flags()
	cf.StringVar(&f.env, "env", "", "the client's simulator, an id of fedirl env list (required with --learner sample): "+strings.Join(registry.Names(), ", "))
	cf.IntVar(&f.client, "client", -1, fmt.Sprintf("the simulator's physics: the paper's client i, counted from 0 (0..%d; -1: the default environment) (--learner sample)", envs.MaxClient))
	cf.StringArrayVar(&f.params, "param", nil, `a physical parameter of the simulator, k=v over --client's (repeatable, or k=v,k2=v2; see "fedirl env list") (--learner sample)`)
	cf.StringVar(&f.config, "sample-config", "", "YAML or JSON settings of the sample-based learner: policy_steps, episodes, confirm_episodes, max_episode_steps, max_iter, tolerance, optimizer, learning_rate, l2, gamma, ppo_preset, ppo: {…}, temperature (default: every default) (--learner sample)")
	cf.Uint64Var(&f.seed, "seed", 0, "seed of PPO, the sampled episodes and the simulator's observation noise; same seed, same θ (--learner sample)")
}

// maker returns the simulator's copies: copy i of --env with --client's
// physics and --param over them, its observation noise seeded from --seed
// and i as "fedirl ppo train" seeds its copies.
func (f *sampleClientFlags) maker(params map[string]float64) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		return registry.Make(f.env, f.client, params, f.seed*1_000_003+uint64(i))
	}
}

// learner builds the sample-based learner from the flags and the
// demonstrations file demos, each error naming its flag (and, for the
// files, the file, the line and the key or field).
func (f *sampleClientFlags) learner(demos string) (*tasks.SampleLearner, error) {
	if err := checkEnvClient(f.env, f.client); err != nil {
		return nil, err
	}
	params, err := parseEnvParams(f.params)
	if err != nil {
		return nil, err
	}
	mk := f.maker(params)
	e, err := mk(0)
	if err != nil {
		return nil, fmt.Errorf("--param: %w", err)
	}
	trajs, err := sampleirl.ReadTrajectoriesFile(demos, e.ObservationSpace(), e.ActionSpace())
	if err != nil {
		return nil, fmt.Errorf("--demos (episodes in %s's spaces): %w", f.env, err)
	}
	if len(trajs) == 0 {
		return nil, fmt.Errorf("--demos %s: no episodes (want one JSON line per episode: {\"obs\": [[…], …], \"actions\": [[…], …]})", demos)
	}
	var sc tasks.SampleConfig
	if f.config != "" {
		if sc, err = tasks.ReadSampleConfig(f.config); err != nil {
			return nil, fmt.Errorf("--sample-config: %w", err)
		}
	}
	l := &tasks.SampleLearner{Env: f.env, MakeEnv: mk, Demos: trajs}
	if err := sc.Apply(l, f.seed); err != nil {
		if f.config == "" {
			return nil, fmt.Errorf("the sample-based learner's defaults for %s: %w", f.env, err)
		}
		return nil, fmt.Errorf("--sample-config %s: %w", f.config, err)
	}
	return l, nil
}
