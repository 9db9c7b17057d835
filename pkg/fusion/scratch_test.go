package fusion

import (
	"testing"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/ot"
)

func TestScratch(t *testing.T) {
	for _, n := range []int{5, 10, 20} {
	spec, _ := gridworld.DefaultFamily(n).Probe(1)
	p, err := GridProbe(spec)
	if err != nil { t.Fatal(err) }
	th := [][]float64{{-0.06, 0.025}, {-0.005, 0.003}, {-0.03, 0.013}}
	for _, m := range []ot.Method{ot.IBP, ot.Stabilized, ot.Paper, ot.Debiased} {
			tol := 0.0
			if m == ot.Paper { tol = -1 }
			r, err := p.Fuse(th, nil, Options{Method: m, Tol: tol})
			if err != nil { t.Log(n, m, err); continue }
			t.Logf("%d %v theta %v iters %d merr %g sigma %g Z %g", n, m, r.Theta, r.Iterations, r.MarginalError, r.Sigma, r.Z)
	}
	mm, _ := Mean(th, nil)
	t.Logf("mean %v", mm)
	}
}
