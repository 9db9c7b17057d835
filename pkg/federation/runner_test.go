package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestRunInProcessStores checks that without StorePath the run keeps its
// store in memory (no file), that a StorePath store is
// a synced bbolt file kept afterwards, and that no variant changes the
// result: every one fuses the independent weighted mean of the clients' θ_i
// (demo-count weights).
func TestRunInProcessStores(t *testing.T) {
	dir := t.TempDir()
	clients := []LocalClient{
		{"a", fixedLearner{Delta: []float64{1, 2}, Demos: 1}},
		{"b", fixedLearner{Delta: []float64{3, -2}, Demos: 3}},
	}
	want := []float64{(1*1 + 3*3) / 4.0, (1*2 + 3*-2) / 4.0}
	for _, tc := range []struct {
		name string
		cfg  InProcessConfig
	}{
		{"temp", InProcessConfig{}},
		{"path-synced", InProcessConfig{StorePath: filepath.Join(dir, "kept2.db")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // a temporary store file would appear here
			spec := testSpec("nosync", 2, 2)
			spec.Fusion = json.RawMessage(`{"weighting":"demos"}`)
			tc.cfg.Fuser = &meanFuser{}
			fused, reps, err := RunInProcess(context.Background(), spec, clients, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(fused) != 1 || len(reps) != 2 {
				t.Fatalf("%d fused rounds, %d reports", len(fused), len(reps))
			}
			approx.Slices(t, "fused theta", fused[0].Theta, want, 1e-15, 0)
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the run left %d files in TMPDIR", len(left))
			}
			if tc.cfg.StorePath != "" { // a named store keeps the run
				s, err := OpenStore(tc.cfg.StorePath)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				c, err := NewCoordinator(s, CoordinatorConfig{Fuser: &meanFuser{}, OpenStatus: true})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				st, err := c.Status(context.Background(), Credentials{})
				if err != nil || len(st) != 1 || !st[0].Done || st[0].TotalSubmissions != 2 {
					t.Fatalf("reopened store: %+v, %v", st, err)
				}
			}
		})
	}
}

// BenchmarkRunInProcess measures one whole in-process federation (in-memory
// store, task, ten clients, one fused round).
func BenchmarkRunInProcess(b *testing.B) {
	var clients []LocalClient
	for i := range 10 {
		clients = append(clients, LocalClient{fmt.Sprintf("c%02d", i), fixedLearner{Delta: []float64{float64(i), 1}, Demos: 1}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := RunInProcess(context.Background(), testSpec("bench", 2, 10), clients,
			InProcessConfig{Fuser: &meanFuser{}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "federations/s")
}
