package classic

import (
	"fmt"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs"
)

func makeCopies(t testing.TB, name string, n int) []envs.Env {
	t.Helper()
	es := make([]envs.Env, n)
	for k := range es {
		e, err := ClientEnv(name, k%6, uint64(k))
		if err != nil {
			t.Fatal(err)
		}
		es[k] = e
	}
	return es
}

// policyAction is a fixed, state-independent action pattern for copy k at step t.
func policyAction(space envs.Space, k, t int) float64 {
	if space.IsDiscrete() {
		return float64((k + t/3) % space.N)
	}
	return float64((k*7+t*3)%9)/2 - 2.25 // in [-2.25, 1.75]: some clipped
}

// TestVectorMatchesSingle checks that Vector steps each copy exactly as a
// hand-driven copy with the same seeds would, auto-reset included, for one
// and two workers.
func TestVectorMatchesSingle(t *testing.T) {
	const n, steps = 5, 700
	for _, name := range Names() {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(t *testing.T) {
				v := NewVectorWorkers(makeCopies(t, name, n), workers)
				defer v.Close()
				ref := makeCopies(t, name, n)
				space := ref[0].ActionSpace()
				ad, od := v.ActDim(), v.ObsDim()
				v.Reset(42)
				episodes := make([]uint64, n)
				refObs := make([][]float64, n)
				for k := range ref {
					refObs[k] = append([]float64(nil), ref[k].Reset(episodeSeed(42, k, 0))...)
				}
				actions := make([]float64, n*ad)
				resets := 0
				for step := range steps {
					for k := range n {
						approx.Slices(t, "obs", v.Obs[k*od:(k+1)*od], refObs[k], 0, 0)
						for j := range ad {
							actions[k*ad+j] = policyAction(space, k, step)
						}
					}
					_, rew, term, trunc := v.Step(actions)
					for k := range n {
						obs, r, te, tr := ref[k].Step(actions[k*ad : (k+1)*ad])
						if r != rew[k] || te != term[k] || tr != trunc[k] {
							t.Fatalf("step %d copy %d: (%v %v %v) vs single (%v %v %v)", step, k, rew[k], term[k], trunc[k], r, te, tr)
						}
						if te || tr {
							approx.Slices(t, "final obs", v.FinalObs[k*od:(k+1)*od], obs, 0, 0)
							episodes[k]++
							resets++
							obs = ref[k].Reset(episodeSeed(42, k, episodes[k]))
						}
						refObs[k] = append(refObs[k][:0], obs...)
					}
				}
				if resets == 0 {
					t.Error("no episode ended: auto-reset untested")
				}
			})
		}
	}
}

// TestVectorNoAllocs checks that Vector.Step allocates nothing, auto-resets included.
func TestVectorNoAllocs(t *testing.T) {
	for _, name := range Names() {
		for _, workers := range []int{1, 2} {
			v := NewVectorWorkers(makeCopies(t, name, 8), workers)
			v.Reset(1)
			actions := make([]float64, v.Len()*v.ActDim())
			space := v.Env(0).ActionSpace()
			step := 0
			allocs := testing.AllocsPerRun(600, func() {
				for k := range v.Len() {
					actions[k*v.ActDim()] = policyAction(space, k, step)
				}
				v.Step(actions)
				step++
			})
			v.Close()
			if allocs != 0 {
				t.Errorf("%s workers=%d: %v allocations per Step", name, workers, allocs)
			}
		}
	}
}

// TestSingleStepNoAllocs checks that Reset and Step of each environment allocate nothing.
func TestSingleStepNoAllocs(t *testing.T) {
	for _, name := range Names() {
		e, err := ClientEnv(name, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		act := []float64{1}
		seed := uint64(0)
		e.Reset(seed)
		allocs := testing.AllocsPerRun(1000, func() {
			if _, _, te, tr := e.Step(act); te || tr {
				seed++
				e.Reset(seed)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per step", name, allocs)
		}
	}
}
