package control

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

func TestScratchPlanner(t *testing.T) {
	env := os.Getenv("SENV")
	if env == "" {
		t.Skip()
	}
	var bins map[string]int
	if b := os.Getenv("SBINS"); b != "" {
		bins = map[string]int{}
		var n1, n2, n3, n4 int
		fmt.Sscanf(b, "%d,%d,%d,%d", &n1, &n2, &n3, &n4)
		ce, _ := tasks.LookupControl(env)
		names := ce.AxisNames()
		for i, n := range []int{n1, n2, n3, n4} {
			if n > 0 {
				bins[names[i]] = n
			}
		}
	}
	ce, _ := tasks.LookupControl(env)
	gs, err := ce.Grid(os.Getenv("SLAT"), bins)
	if err != nil {
		t.Fatal(err)
	}
	if r := os.Getenv("SRANGE"); r != "" {
		var a, b float64
		fmt.Sscanf(r, "%g,%g", &a, &b)
		gs.State[2].Lo, gs.State[2].Hi = -a, a
		gs.State[3].Lo, gs.State[3].Hi = -b, b
	}
	g, _ := discretize.New(gs)
	for _, client := range []int{0, 3} {
		params, _ := classic.ClientParams(env, client)
		start := time.Now()
		cfg := discretize.ModelConfig{Samples: 8, Successor: os.Getenv("SSUCC"), Seed: 1, Gamma: 0.99}
		m, r, err := discretize.SampleModelReward(context.Background(), g, func() (discretize.Simulator, error) { return classic.MakeWithParams(env, params) }, cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-6, Anderson: 20})
		v := ws.ValueIteration(nil, r)
		pl, _ := discretize.NewPlanner(g, v.Q)
		e, _ := registry.Make(env, client, nil, 7)
		st := e.(interface{ State([]float64) []float64 })
		act := make([]float64, g.ActionDim())
		tot := 0.0
		for ep := range 10 {
			e.Reset(uint64(ep))
			for {
				s := st.State(nil)
				pl.Act(act, s)
				_, rr, term, trunc := e.Step(act)
				tot += rr
				if term || trunc {
					break
				}
			}
		}
		t.Logf("%s %s bins=%v succ=%s client %d: pairs %d, planner mean return %.1f (%v, VI iters %d)", env, os.Getenv("SLAT"), bins, cfg.Successor, client, g.NumPairs(), tot/10, time.Since(start).Round(time.Millisecond), v.Iterations)
	}
}
