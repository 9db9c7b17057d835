package fusion

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/lattice"
	"gonum.org/v1/gonum/mat"
)

// Probe is the server's shared support: the lattice X and the feature matrix
// Φ (one row per lattice point, row-major lattice order) on which client
// rewards are evaluated and fused. Task families (pkg/tasks) build it from
// their serializable spec, with the same feature code the clients use.
type Probe struct {
	Phi     *mat.Dense
	Lattice lattice.Lattice
}

// Validate checks that Φ has one row per lattice point.
func (p Probe) Validate() error {
	if p.Phi == nil {
		return fmt.Errorf("fusion: probe has no feature matrix")
	}
	if err := p.Lattice.Validate(); err != nil {
		return fmt.Errorf("fusion: probe: %w", err)
	}
	if r, _ := p.Phi.Dims(); r != p.Lattice.Len() {
		return fmt.Errorf("fusion: probe Φ has %d rows, its lattice %d points", r, p.Lattice.Len())
	}
	return nil
}

// Fuse is Barycentric on the probe.
func (p Probe) Fuse(thetas [][]float64, weights []float64, opt Options) (Result, error) {
	return Barycentric(p.Phi, p.Lattice, thetas, weights, opt)
}
