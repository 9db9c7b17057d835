package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestEveryOutputFlagChecked walks the command tree: every flag that names
// an output (out, *-out, addr-file, dp-ledger) is listed in outputFlags, so
// checkOutputs checks it before the command starts, and every entry of
// outputFlags names a real command and flag.
func TestEveryOutputFlagChecked(t *testing.T) {
	seen := map[string]bool{}
	walk(rootCmd, func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Deprecated != "" || !isOutputFlagName(f.Name) {
				return
			}
			seen[c.CommandPath()+" --"+f.Name] = true
			if _, ok := outputFlags[c.CommandPath()][f.Name]; !ok {
				t.Errorf("%s --%s names an output but is not in outputFlags", c.CommandPath(), f.Name)
			}
		})
	})
	for path, flags := range outputFlags {
		for name := range flags {
			if !seen[path+" --"+name] {
				t.Errorf("outputFlags lists %s --%s, which does not exist", path, name)
			}
		}
	}
}

// TestCheckOutputs runs commands whose output cannot be written and checks
// that they stop before any work with the flag and the reason; a writable
// path leaves nothing behind.
func TestCheckOutputs(t *testing.T) {
	resetFlags(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a.json")
	os.WriteFile(file, []byte("{}"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "--out", "/nonexistent/x.json", "--server", "127.0.0.1:1", "--task", "t", "--id", "a", "--mdp", "m", "--demos", "d"}, "--out /nonexistent/x.json: its folder /nonexistent does not exist"},
		{[]string{"client", "--learner", "mlp", "--env", "CartPole-v1", "--distill-out", "/nonexistent/net.json", "--server", "127.0.0.1:1", "--task", "t", "--id", "a", "--demos", "d"}, "--distill-out /nonexistent/net.json: its folder /nonexistent does not exist"},
		{[]string{"irl", "--out", dir, "--spec", "m", "--demos", "d"}, "is a folder: give a file name"},
		{[]string{"reproduce", "gridworld", "--quick", "--out", ""}, `--out "": an empty path is not a place to write; give a folder, or leave --out out for the default`},
		{[]string{"barycenter", "--out", "", "a.npy"}, `--out "": an empty path is not a place to write; give a file, or - for stdout`},
		{[]string{"reproduce", "gridworld", "--quick", "--out", file}, "is a file: give a folder"},
		{[]string{"ppo", "train", "--env", "CartPole-v1", "--out", filepath.Join(file, "x")}, "is a file, not a folder"},
		{[]string{"reproduce", "control", "merge", filepath.Join(file, "m"), dir}, "OUT " + filepath.Join(file, "m") + ": " + dir + "/a.json is a file, not a folder"},
		{[]string{"server", "task", "create", "--store", filepath.Join(dir, "s.db"), "--clients", "a", "--tokens-out", filepath.Join(dir, "no", "t.json")}, "--tokens-out"},
	} {
		resetFlags(t)
		rootCmd.SetArgs(tc.args)
		err := rootCmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fedirl %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	if _, err := os.Stat("/sys/kernel"); err == nil && os.Getuid() == 0 {
		if err := checkOutputPath("/sys/fedirl-x/alice.json", outputFile); err == nil {
			t.Error("/sys/fedirl-x/alice.json accepted")
		}
		if err := checkOutputPath("/sys/fedirl-out", outputFolder); err == nil {
			t.Error("/sys/fedirl-out accepted as a folder")
		}
	}
	for _, tc := range []struct {
		path string
		kind outputKind
	}{{file, outputFile}, {filepath.Join(dir, "new.json"), outputFile}, {filepath.Join(dir, "x", "y"), outputFolder}, {dir, outputFolder}} {
		if err := checkOutputPath(tc.path, tc.kind); err != nil {
			t.Errorf("%s: %v", tc.path, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the checks left files behind: %v", ents)
	}
}

// resetFlags puts every flag given in an earlier Execute of the shared
// rootCmd (tests run commands in one process) back to its default, so that
// a test sees only its own arguments.
func resetFlags(t *testing.T) {
	reset := func() {
		walk(rootCmd, func(c *cobra.Command) {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Changed {
					return
				}
				if sv, ok := f.Value.(pflag.SliceValue); ok {
					sv.Replace(nil)
				} else {
					f.Value.Set(f.DefValue)
				}
				f.Changed = false
			})
		})
	}
	reset()
	t.Cleanup(reset)
}
