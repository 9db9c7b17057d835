package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
)

// walk calls fn on cmd and every command below it.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// TestFlagConventions walks the whole command tree and checks the
// conventions written down in flags.go: one spelling per concept.
func TestFlagConventions(t *testing.T) {
	// Old or foreign spellings of a concept that has one name here.
	banned := map[string]string{
		"output": "out", "o": "out", "outdir": "out", "output-dir": "out",
		"workers": "jobs", "threads": "jobs", "procs": "jobs", "parallel": "jobs", "n-jobs": "jobs",
		"envs": "env", "environment": "env", "env-id": "env",
		"n-seeds": "seeds", "num-seeds": "seeds",
	}
	commands := 0
	walk(rootCmd, func(c *cobra.Command) {
		commands++
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			path := c.CommandPath()
			if f.Hidden || f.Deprecated != "" {
				return // deprecated aliases (they warn) and testing-only flags
			}
			if want, bad := banned[f.Name]; bad {
				t.Errorf("%s --%s: spell it --%s", path, f.Name, want)
			}
			if f.Shorthand == "o" && f.Name != "out" {
				t.Errorf("%s: -o is the shorthand of --%s, want --out", path, f.Name)
			}
			if f.Name == "jobs" || f.Name == "update-jobs" {
				if f.DefValue == "0" || strings.HasPrefix(f.DefValue, "-") {
					t.Errorf("%s --%s: default %s, want ≥ 1", path, f.Name, f.DefValue)
				}
			}
			// The environments' --client: -1 (the default physics) unless given.
			if f.Name == "client" && (strings.HasPrefix(path, "fedirl env") || strings.HasPrefix(path, "fedirl ppo")) && f.DefValue != "-1" {
				t.Errorf("%s --client: default %s, want -1 (the default environment)", path, f.DefValue)
			}
		})
	})
	if commands < 20 {
		t.Fatalf("walked only %d commands", commands)
	}
}

// notCounts are the int flags that are not counts, each with why 0 or a
// negative value is meaningful or refused elsewhere. Every other int flag of
// every command must refuse 0 and negative values while the command line is
// parsed (countVar), so that no command can quietly accept `--jobs 0`.
var notCounts = map[string]string{
	"client":     "-1 is the default physics; ranges checked per environment",
	"byzantine":  "f = 0 (no Byzantine client) is a valid Krum setting; negatives refused as fusion.byzantine",
	"eval-every": "0 means never evaluate",
	// The server's limits and a task's numbers: 0 is refused in RunE (TestExplicitValuesHonouredOrRefused).
	"max-connections": "server limit", "max-connections-per-peer": "server limit", "max-streams-per-connection": "server limit",
	"max-tokenless-calls": "server limit", "max-message-bytes": "server limit", "max-description-bytes": "task limit",
	"max-probe-points": "task limit", "max-probe-entries": "task limit", "max-fusion-iterations": "task limit",
	"max-inner-iterations": "task limit", "max-irl-iterations": "task limit",
	"reserved-connections": "server limit: 0 reserves no place; negatives refused in RunE",
	"gridworld-size":       "0: no grid-world task", "quorum": "0: all clients; explicit 0 refused in RunE",
	"min-clients": "0: the quorum", "rounds": "checked in RunE", "irl-iterations": "0: irl's default; explicit 0 refused in RunE",
}

// TestFlagConventionsCounts walks every command: each int flag that counts
// something refuses 0 and -1 at parse time, --seeds comes with --seed (a run
// uses seeds S … S+N−1), and a command that runs several seeds writes to --out.
func TestFlagConventionsCounts(t *testing.T) {
	counts := 0
	walk(rootCmd, func(c *cobra.Command) {
		path := c.CommandPath()
		fs := c.LocalFlags()
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "int" || f.Deprecated != "" {
				return
			}
			if _, ok := notCounts[f.Name]; ok {
				return
			}
			counts++
			for _, v := range []string{"0", "-1"} {
				if err := f.Value.Set(v); err == nil {
					t.Errorf("%s --%s %s accepted: a count must be refused below 1 (register it with countVar)", path, f.Name, v)
				} else if !strings.Contains(err.Error(), "want ≥ 1") {
					t.Errorf("%s --%s %s: refusal %q does not say what is wanted", path, f.Name, v, err)
				}
			}
		})
		if fs.Lookup("seeds") != nil {
			if fs.Lookup("seed") == nil {
				t.Errorf("%s has --seeds but no --seed (the first seed)", path)
			}
			if o := fs.Lookup("out"); o == nil || o.Value.Type() != "string" {
				t.Errorf("%s runs several seeds but has no string --out", path)
			}
		}
	})
	if counts < 20 {
		t.Fatalf("checked only %d count flags", counts)
	}
}

// TestControlSeedAndJobs runs "reproduce control" end to end through its
// flags: --seed 7 --seeds 2 plans seeds 7 and 8; --jobs 0 and -1 are refused
// before anything runs.
func TestControlSeedAndJobs(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := newReproduceControlCmd()
	cmd.SetArgs([]string{"--quick", "--seed", "7", "--seeds", "2", "--plan", "--out", dir})
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "seeds 7, 8,") {
		t.Errorf("--seed 7 --seeds 2: plan header %q, want seeds 7, 8", strings.SplitN(out.String(), "\n", 2)[0])
	}
	for _, v := range []string{"0", "-1"} {
		cmd := newReproduceControlCmd()
		cmd.SetArgs([]string{"--quick", "--jobs", v, "--out", dir})
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), `"--jobs"`) {
			t.Errorf("reproduce control --jobs %s: error %v, want a refusal naming --jobs", v, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused runs wrote %d files into --out", len(entries))
	}
}

// TestExplicitValuesHonouredOrRefused runs commands with explicit zeros and
// out-of-range values and checks each is refused with an error naming the
// flag, before any work is done.
func TestExplicitValuesHonouredOrRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte("[1, 2, 3, 4]"), 0o644)
	os.WriteFile(b, []byte("[4, 3, 2, 1]"), 0o644)
	for _, c := range []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		{"irl iters", newIRLCmd, []string{"--spec", "s.json", "--demos", "d.jsonl", "--iters", "0"}, `"0" for "--iters"`},
		{"irl lr", newIRLCmd, []string{"--spec", "s.json", "--demos", "d.jsonl", "--lr", "0"}, "--lr 0"},
		{"irl temperature", newIRLCmd, []string{"--spec", "s.json", "--demos", "d.jsonl", "--temperature", "0"}, "--temperature 0"},
		{"irl jobs", newIRLCmd, []string{"--spec", "s.json", "--demos", "d.jsonl", "--jobs", "0"}, `"0" for "--jobs"`},
		{"irl workers alias", newIRLCmd, []string{"--spec", "s.json", "--demos", "d.jsonl", "--workers", "-3"}, `"-3" for "--workers"`},
		{"barycenter iters", newBarycenterCmd, []string{"--iters", "0", a, b}, `"0" for "--iters"`},
		{"barycenter tol", newBarycenterCmd, []string{"--tol", "0", a, b}, "--tol 0"},
		{"barycenter weights", newBarycenterCmd, []string{"--weights", "-1,2", a, b}, "--weights"},
		{"ot distance iters", newOTCmd, []string{"distance", "--iters", "0", a, b}, `"0" for "--iters"`},
		{"ppo train steps", newPPOTrainCmd, []string{"--steps", "0"}, `"0" for "--steps"`},
		{"ppo train jobs", newPPOTrainCmd, []string{"--jobs", "0"}, `"0" for "--jobs"`},
		{"ppo train client", newPPOTrainCmd, []string{"--client", "99", "--steps", "10"}, "--client 99"},
		{"ppo train env", newPPOTrainCmd, []string{"--env", "Nope-v0", "--client", "2", "--steps", "10"}, "--env \"Nope-v0\""},
		{"ppo train precision", newPPOTrainCmd, []string{"--precision", "float16"}, "--precision"},
		{"ppo train empty precision", newPPOTrainCmd, []string{"--precision", ""}, "--precision \"\""},
		{"ppo study jobs", newPPOStudyCmd, []string{"--jobs", "-1", "--out", dir}, `"-1" for "--jobs"`},
		{"ppo study update-jobs", newPPOStudyCmd, []string{"--update-jobs", "0", "--out", dir}, `"0" for "--update-jobs"`},
		{"ppo eval client", newPPOEvalCmd, []string{"--policy", "p.json", "--client", "-2"}, "--client -2"},
		{"rollout classic client", newEnvRolloutCmd, []string{"--env", "Pendulum-v1", "--client", "99", "--actions", "0"}, "--client 99"},
		{"rollout lunar client", newEnvRolloutCmd, []string{"--env", "LunarLanderContinuous-v3", "--client", "11", "--actions", "0,0"}, "--client 11"},
		{"rollout unknown env", newEnvRolloutCmd, []string{"--env", "Foo-v1", "--client", "2", "--actions", "0"}, "--env \"Foo-v1\""},
		{"episodes client", newEnvEpisodesCmd, []string{"--env", "CartPole-v1", "--client", "11"}, "--client 11"},
		{"gridworld jobs", newReproduceGridworldCmd, []string{"--jobs", "0", "--out", dir}, `"0" for "--jobs"`},
		{"task create iterations", newServerTaskCreateCmd, []string{"--store", filepath.Join(dir, "x.db"), "--id", "t", "--clients", "a", "--irl-iterations", "0"}, "--irl-iterations 0"},
		{"client timeout", newClientCmd, []string{"--timeout", "0"}, "--timeout 0s"},
		{"task create quorum", newServerTaskCreateCmd, []string{"--store", filepath.Join(dir, "x.db"), "--id", "t", "--clients", "a", "--quorum", "0"}, "--quorum 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := c.cmd()
			cmd.SetArgs(c.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
			}
		})
	}
}

// TestDeprecatedAliasesAndWeights checks that an old spelling still works
// (and warns), and that barycenter weights are normalised and echoed as used.
func TestDeprecatedAliasesAndWeights(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "bar.json")
	os.WriteFile(a, []byte("[1, 2, 3, 4]"), 0o644)
	os.WriteFile(b, []byte("[4, 3, 2, 1]"), 0o644)
	cmd := newBarycenterCmd()
	var stderr bytes.Buffer
	cmd.SetErr(&stderr)
	cmd.Flags().SetOutput(&stderr)
	var got barycenterOutput
	runJSONCommand(t, cmd, out, &got, "--weights", "0.5,0.6", "--output", out, a, b)
	if !strings.Contains(stderr.String(), "--output has been deprecated, use --out instead") {
		t.Errorf("no deprecation warning for --output; stderr %q", stderr.String())
	}
	if len(got.Weights) != 2 || got.Weights[0] != 0.5/1.1 || got.Weights[1] != 0.6/1.1 {
		t.Errorf("weights echoed %v, want [0.5/1.1 0.6/1.1]", got.Weights)
	}
}

// TestGridworldHelpListsRunFiles checks that "reproduce gridworld --help"
// names every file the run writes.
func TestGridworldHelpListsRunFiles(t *testing.T) {
	long := newReproduceGridworldCmd().Long
	for _, f := range gridstudy.RunFiles {
		base := strings.TrimSuffix(f, filepath.Ext(f))
		if !strings.Contains(long, f) && !strings.Contains(long, base+" (") && !strings.Contains(long, base+"/") &&
			!strings.Contains(long, "/"+base+" ") {
			t.Errorf("reproduce gridworld --help does not mention %s", f)
		}
	}
}
