package federation

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/irl"
)

// shortestPathPolicy returns, per cell, the first action (in index order) that
// moves to a free cell strictly closer to the goal by breadth-first distance;
// cells with no such move keep action Up. It is the expert of the test demos.
func shortestPathPolicy(g *gridworld.Grid) []int {
	n := g.NumStates()
	dist := make([]int, n)
	for i := range dist {
		dist[i] = -1
	}
	dist[g.Goal()] = 0
	queue := []int{g.Goal()}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for a := range gridworld.NumActions {
			t := g.Move(s, a)
			if t != s && !g.IsObstacle(t) && dist[t] < 0 {
				dist[t] = dist[s] + 1
				queue = append(queue, t)
			}
		}
	}
	policy := make([]int, n)
	for s := range n {
		for a := range gridworld.NumActions {
			if t := g.Move(s, a); dist[t] >= 0 && dist[s] > 0 && dist[t] < dist[s] {
				policy[s] = a
				break
			}
		}
	}
	return policy
}

// writeGridClient writes client i's MDP spec and demonstrations for a 5×5
// family seed, as "fedirl client --mdp --demos" reads them, and returns the
// two paths.
func writeGridClient(t testing.TB, dir string, seed uint64, i, demos int) (string, string) {
	t.Helper()
	spec, err := gridworld.DefaultFamily(5).Client(seed, i)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gridworld.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.MDP(0.95, spec.Horizon)
	if err != nil {
		t.Fatal(err)
	}
	st, err := features.Grid(spec.Size, spec.Goal, spec.Obstacles)
	if err != nil {
		t.Fatal(err)
	}
	mdpPath := filepath.Join(dir, fmt.Sprintf("client%d.mdp.json", i))
	if err := irl.WriteSpecFile(mdpPath, m, features.StateAction(st, gridworld.NumActions)); err != nil {
		t.Fatal(err)
	}
	policy := shortestPathPolicy(g)
	rng := rand.New(rand.NewPCG(seed, uint64(1000+i)))
	var trajs []irl.Trajectory
	var steps []gridworld.Step
	for range demos {
		var last int
		steps, last, _ = g.Rollout(steps, rng, policy, g.SampleStart(rng))
		var tr irl.Trajectory
		for _, s := range steps {
			tr.States = append(tr.States, s.State)
			tr.Actions = append(tr.Actions, s.Action)
		}
		tr.States = append(tr.States, last)
		trajs = append(trajs, tr)
	}
	demosPath := filepath.Join(dir, fmt.Sprintf("client%d.demos.jsonl", i))
	if err := irl.WriteTrajectoriesFile(demosPath, trajs); err != nil {
		t.Fatal(err)
	}
	return mdpPath, demosPath
}
