package tasks

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyRules guards the layering the package comments promise: the
// federation knows no environment, learner or OT engine; fusion knows no
// environment; lattice imports nothing of the project; ot nothing of RL;
// the sample-based learner nothing of the federation or the studies.
func TestDependencyRules(t *testing.T) {
	if testing.Short() {
		t.Skip("go list skipped in -short mode")
	}
	const mod = "github.com/fedirl/fedirl/pkg/"
	for _, tc := range []struct {
		pkg       string
		forbidden []string // package path prefixes below mod
	}{
		{"federation", []string{"irl", "mdp", "ot", "envs", "fusion", "tasks", "features", "lattice", "experiments"}},
		{"fusion", []string{"envs", "irl", "mdp", "federation", "tasks", "experiments"}},
		{"ot", []string{"envs", "irl", "mdp", "fusion", "federation", "tasks", "features", "rl"}},
		{"irl", []string{"envs", "fusion", "federation", "tasks", "discretize", "experiments", "rl"}}, // EPIC, exact or sampled, reads rewards as functions, never an environment
		// The sample-based learner sits above irl and rl/ppo: it trains PPO in a
		// client's simulator and knows no study, task, fusion or transport.
		{"sampleirl", []string{"fusion", "federation", "tasks", "experiments", "discretize", "ot"}},
		// Feature maps, lattice or step ones, know no environment, task or learner.
		{"features", []string{"envs", "fusion", "federation", "tasks", "experiments", "rl", "irl", "sampleirl", "discretize"}},
		{"lattice", []string{""}},
		{"privacy", []string{""}},  // the accountant imports nothing of the project
		{"jointopt", []string{""}}, // the joint optimizer is bottom floor: federation and fusion share it
		{"npy", []string{""}},
	} {
		out, err := exec.Command("go", "list", "-deps", mod+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, ok := strings.CutPrefix(dep, mod)
			if !ok || dep == mod+tc.pkg {
				continue
			}
			for _, f := range tc.forbidden {
				if f == "" || rest == f || strings.HasPrefix(rest, f+"/") {
					t.Errorf("%s depends on %s", tc.pkg, dep)
				}
			}
		}
	}
}
