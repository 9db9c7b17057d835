package classic

import (
	"fmt"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
)

// BenchmarkStep measures single-environment steps (auto-reset by hand when an episode ends).
func BenchmarkStep(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			e, err := Make(name)
			if err != nil {
				b.Fatal(err)
			}
			space := e.ActionSpace()
			act := []float64{0}
			seed := uint64(0)
			e.Reset(seed)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				act[0] = policyAction(space, 0, i)
				if _, _, te, tr := e.Step(act); te || tr {
					seed++
					e.Reset(seed)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkVectorStep measures Vector.Step over 64 copies, serial and with 2 workers.
func BenchmarkVectorStep(b *testing.B) {
	const n = 64
	for _, name := range Names() {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/n=%d/workers=%d", name, n, workers), func(b *testing.B) {
				es := make([]envs.Env, n)
				for k := range es {
					e, err := Make(name)
					if err != nil {
						b.Fatal(err)
					}
					es[k] = e
				}
				v := NewVectorWorkers(es, workers)
				defer v.Close()
				v.Reset(1)
				space := es[0].ActionSpace()
				actions := make([]float64, n*v.ActDim())
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for k := range n {
						actions[k*v.ActDim()] = policyAction(space, k, i)
					}
					v.Step(actions)
				}
				b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}
