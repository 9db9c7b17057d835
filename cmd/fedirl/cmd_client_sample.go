package main

import (
	"fmt"
	"slices"
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
	learnerMLP    = "mlp"
)

// learnerNames lists the learners in the order their names are printed.
var learnerNames = []string{learnerMaxEnt, learnerSample, learnerMLP}

// learnerFlag is a flag that belongs to some of the learners, with what
// it is for, so that the others can refuse it by name.
type learnerFlag struct {
	name, what string
	learners   []string
}

// learnerFlags lists the flags that belong to some learners only.
var learnerFlags = []learnerFlag{
	{"mdp", "the client's lattice MDP", []string{learnerMaxEnt}},
	{"solver", "the lattice MDP's infinite-horizon solver", []string{learnerMaxEnt}},
	{"submit-reward", "a reward on the lattice probe from the client's own features", []string{learnerMaxEnt}},
	{"env", "the client's simulator", []string{learnerSample, learnerMLP}},
	{"client", "the simulator's physics, the paper's client i", []string{learnerSample, learnerMLP}},
	{"param", "a physical parameter of the simulator", []string{learnerSample, learnerMLP}},
	{"sample-config", "the sample-based learners' settings", []string{learnerSample, learnerMLP}},
	{"seed", "the seed of PPO and the sampled episodes", []string{learnerSample, learnerMLP}},
	{"distill-out", "the fused reward distilled into a network", []string{learnerMLP}},
}

// checkLearnerFlags refuses an unknown --learner, and every flag given
// explicitly that belongs to other learners only, naming the flag, what
// it is for and the learners it belongs to.
func checkLearnerFlags(cmd *cobra.Command, learner string) error {
	if !slices.Contains(learnerNames, learner) {
		return fmt.Errorf("--learner %q: want %q (MaxEnt IRL on a lattice MDP, --mdp), %q (sample-based MaxEnt IRL of a linear reward in a simulator, --env) or %q (a neural reward learned by AIRL in a simulator, --env)", learner, learnerMaxEnt, learnerSample, learnerMLP)
	}
	for _, fl := range learnerFlags {
		if slices.Contains(fl.learners, learner) || !flagChanged(cmd, fl.name) {
			continue
		}
		owners := strings.Join(fl.learners, " or ")
		return fmt.Errorf("--%s (%s) belongs to --learner %s, and this client runs --learner %s: leave --%s out, or run --learner %s",
			fl.name, fl.what, owners, learner, fl.name, owners)
	}
	return nil
}

// sampleClientFlags holds the flags of "fedirl client --learner sample"
// and "--learner mlp", the learners in a simulator.
type sampleClientFlags struct {
	env, config, distillOut string
	client                  int
	params                  []string
	seed                    uint64
}

// register adds the sample learner's flags to cmd.
func (f *sampleClientFlags) register(cmd *cobra.Command) {
	cf := cmd.Flags()
	cf.StringVar(&f.env, "env", "", "the client's simulator, an id of fedirl env list (required with --learner sample and mlp): "+strings.Join(registry.Names(), ", "))
	cf.IntVar(&f.client, "client", -1, fmt.Sprintf("the simulator's physics: the paper's client i, counted from 0 (0..%d; -1: the default environment) (--learner sample, mlp)", envs.MaxClient))
	cf.StringArrayVar(&f.params, "param", nil, `a physical parameter of the simulator, k=v over --client's (repeatable, or k=v,k2=v2; see "fedirl env list") (--learner sample, mlp)`)
	cf.StringVar(&f.config, "sample-config", "", "YAML or JSON settings of the sample-based learners: policy_steps, episodes, confirm_episodes, max_episode_steps, max_iter, tolerance, optimizer, learning_rate, l2, gamma, ppo_preset, ppo: {…}, temperature (--learner sample), mlp: {net, reward_steps, holdout, distill} (--learner mlp) (default: every default)")
	cf.Uint64Var(&f.seed, "seed", 0, "seed of PPO, the sampled episodes, the simulator's observation noise and the reward network's initialisation; same seed, same result (--learner sample, mlp)")
	cf.StringVar(&f.distillOut, "distill-out", "", "after a points task's reward-space fusion, distil the fused reward at the probe into a network of mlp.net's shape and write it to this file (a reward network file, JSON: sampleirl's format) (--learner mlp)")
}

// maker returns the simulator's copies: copy i of --env with --client's
// physics and --param over them, its observation noise seeded from --seed
// and i as "fedirl ppo train" seeds its copies.
func (f *sampleClientFlags) maker(params map[string]float64) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		return registry.Make(f.env, f.client, params, f.seed*1_000_003+uint64(i))
	}
}

// simulator returns --env's maker with the flags' physics and the
// demonstrations file demos read in its spaces, each error naming its flag
// (and the file, the line and the field).
func (f *sampleClientFlags) simulator(demos string) (ppo.EnvMaker, []sampleirl.Trajectory, error) {
	if err := checkEnvClient(f.env, f.client); err != nil {
		return nil, nil, err
	}
	params, err := parseEnvParams(f.params)
	if err != nil {
		return nil, nil, err
	}
	mk := f.maker(params)
	e, err := mk(0)
	if err != nil {
		return nil, nil, fmt.Errorf("--param: %w", err)
	}
	trajs, err := sampleirl.ReadTrajectoriesFile(demos, e.ObservationSpace(), e.ActionSpace())
	if err != nil {
		return nil, nil, fmt.Errorf("--demos (episodes in %s's spaces): %w", f.env, err)
	}
	if len(trajs) == 0 {
		return nil, nil, fmt.Errorf("--demos %s: no episodes (want one JSON line per episode: {\"obs\": [[…], …], \"actions\": [[…], …]})", demos)
	}
	return mk, trajs, nil
}

// settings reads --sample-config (every default without it).
func (f *sampleClientFlags) settings() (tasks.SampleConfig, error) {
	if f.config == "" {
		return tasks.SampleConfig{}, nil
	}
	sc, err := tasks.ReadSampleConfig(f.config)
	if err != nil {
		return sc, fmt.Errorf("--sample-config: %w", err)
	}
	return sc, nil
}

// settingsError names the settings file (or the defaults) in err.
func (f *sampleClientFlags) settingsError(learner string, err error) error {
	if f.config == "" {
		return fmt.Errorf("the %s learner's defaults for %s: %w", learner, f.env, err)
	}
	return fmt.Errorf("--sample-config %s: %w", f.config, err)
}

// learner builds the sample-based learner from the flags and the
// demonstrations file demos, each error naming its flag (and, for the
// files, the file, the line and the key or field).
func (f *sampleClientFlags) learner(demos string) (*tasks.SampleLearner, error) {
	mk, trajs, err := f.simulator(demos)
	if err != nil {
		return nil, err
	}
	sc, err := f.settings()
	if err != nil {
		return nil, err
	}
	l := &tasks.SampleLearner{Env: f.env, MakeEnv: mk, Demos: trajs}
	if err := sc.Apply(l, f.seed); err != nil {
		return nil, f.settingsError("sample-based", err)
	}
	return l, nil
}

// mlpLearner builds the neural-reward learner from the flags and the
// demonstrations file demos, as learner does.
func (f *sampleClientFlags) mlpLearner(demos string) (*tasks.MLPSampleLearner, error) {
	mk, trajs, err := f.simulator(demos)
	if err != nil {
		return nil, err
	}
	sc, err := f.settings()
	if err != nil {
		return nil, err
	}
	l := &tasks.MLPSampleLearner{Env: f.env, MakeEnv: mk, Demos: trajs, Distilling: f.distillOut != ""}
	if err := sc.ApplyMLP(l, f.seed); err != nil {
		return nil, f.settingsError("neural-reward", err)
	}
	return l, nil
}
