package experiments

import (
	"context"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
)

func TestScratchIRL(t *testing.T) {
	for _, size := range []int{5, 10, 20} {
		f := gridworld.DefaultFamily(size)
		for i := 0; i < 3; i++ {
			spec, _ := f.Client(1, i)
			e, err := NewEnv(spec, 0.95)
			if err != nil { t.Fatal(err) }
			pol := e.GreedyPolicy([]float64{-1, 0.5})
			exp := e.Grid.SuccessProbability(pol)
			demos, live := e.Demonstrations(stream(1, size, 1, i), pol, 20)
			t0 := time.Now()
			c := DefaultConfig().IRL
			res, err := e.LocalIRL(context.Background(), demos, c, 50)
			if err != nil { t.Fatal(err) }
			dt := time.Since(t0)
			lp := e.GreedyPolicy(res.Theta)
			t.Logf("N=%d client %d slip %.3f expert %.3f live %d theta %v local %.3f irl %v grad %v", size, i, spec.Slip, exp, live, res.Theta, e.Grid.SuccessProbability(lp), dt, res.GradNorm[len(res.GradNorm)-1])
		}
	}
}
