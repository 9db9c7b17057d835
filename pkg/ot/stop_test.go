package ot

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBarycenterStops: closing BarycenterOptions.Stop ends every method's
// solve at its next iteration with ErrStopped, instead of running the
// iteration budget out (a fusion at shutdown must stop within a second).
func TestBarycenterStops(t *testing.T) {
	l := UniformLattice(1, 24, 24)
	mus := bumps(rand.New(rand.NewPCG(5, 1)), l, 3, 1e-3)
	for _, tc := range []struct {
		name  string
		opt   BarycenterOptions
		plain bool
	}{
		{"ibp lattice", BarycenterOptions{Method: IBP}, false},
		{"ibp plain", BarycenterOptions{Method: IBP}, true},
		{"stabilized", BarycenterOptions{Method: Stabilized}, false},
		{"debiased", BarycenterOptions{Method: Debiased}, false},
		{"paper", BarycenterOptions{Method: Paper, InnerIter: 1000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plainIBP = tc.plain
			defer func() { plainIBP = false }()
			// Closed before the start: no iteration completes.
			// (Stop is a context's Done channel: this package's tests
			// shadow the builtin close.)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			o := tc.opt
			o.MaxIter, o.Tol, o.Stop = 1<<30, -1, ctx.Done()
			r, err := LatticeBarycenter(l, mus, nil, o)
			if !errors.Is(err, ErrStopped) || r.Iterations > 0 {
				t.Fatalf("pre-closed Stop: %d iterations, err %v", r.Iterations, err)
			}
			// Closed while running a 2^30-iteration budget.
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			o.Stop = ctx.Done()
			start := time.Now()
			r, err = LatticeBarycenter(l, mus, nil, o)
			if !errors.Is(err, ErrStopped) {
				t.Fatalf("Stop closed at 50 ms: err %v after %d iterations", err, r.Iterations)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("stopped after %v", d)
			}
		})
	}
}
