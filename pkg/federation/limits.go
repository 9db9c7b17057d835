package federation

import (
	"fmt"
	"math"
)

// Limits are the resource bounds a task must respect to be created: they are
// checked against the spec before anything is built, so that one CreateTask
// cannot exhaust the server (the gridworld probe of size 100000 ran
// it out of memory while being validated). The coordinator checks the
// fields it reads (the description); the task families (pkg/tasks) check
// the probe's size, computed from its JSON before building it (CheckProbe),
// and the fusion and IRL budgets (CheckEpsilon, CheckIterations).
//
// Zero values are the documented defaults (DefaultLimits); an operator sets
// them with the flags named in each field's comment, on "fedirl server" and
// "fedirl server task create".
type Limits struct {
	// MaxDescriptionBytes bounds a task's description (--max-description-bytes,
	// default 4096).
	MaxDescriptionBytes int
	// MaxProbePoints bounds the probe's support |X|, the lattice points on
	// which rewards are fused (--max-probe-points, default 2²¹ = 2,097,152:
	// the control study's "ultra" grids have about 10⁶).
	MaxProbePoints int
	// MaxProbeEntries bounds |X| × theta_dim, the entries of the probe's
	// feature matrix Φ (8 bytes each; --max-probe-entries, default 2²⁶,
	// 512 MiB).
	MaxProbeEntries int
	// MinEpsilon and MaxEpsilon bound fusion.epsilon, the entropic
	// regularization in squared lattice spacings (--min-epsilon,
	// --max-epsilon; defaults 1e-3 and 1e3). 0 (the default ε) is allowed.
	MinEpsilon, MaxEpsilon float64
	// MaxFusionIterations bounds fusion.max_iter, the barycenter's outer
	// iterations (--max-fusion-iterations, default 100,000).
	MaxFusionIterations int
	// MaxInnerIterations bounds fusion.inner_iter, Sinkhorn iterations per
	// outer step of the paper's solver (--max-inner-iterations, default 1,000).
	MaxInnerIterations int
	// MaxIRLIterations bounds irl.max_iter, the clients' gradient steps
	// (--max-irl-iterations, default 100,000).
	MaxIRLIterations int
}

// DefaultLimits returns the default Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxDescriptionBytes: 4096,
		MaxProbePoints:      1 << 21,
		MaxProbeEntries:     1 << 26,
		MinEpsilon:          1e-3,
		MaxEpsilon:          1e3,
		MaxFusionIterations: 100000,
		MaxInnerIterations:  1000,
		MaxIRLIterations:    100000,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&l.MaxDescriptionBytes, d.MaxDescriptionBytes)
	setInt(&l.MaxProbePoints, d.MaxProbePoints)
	setInt(&l.MaxProbeEntries, d.MaxProbeEntries)
	setInt(&l.MaxFusionIterations, d.MaxFusionIterations)
	setInt(&l.MaxInnerIterations, d.MaxInnerIterations)
	setInt(&l.MaxIRLIterations, d.MaxIRLIterations)
	if l.MinEpsilon == 0 {
		l.MinEpsilon = d.MinEpsilon
	}
	if l.MaxEpsilon == 0 {
		l.MaxEpsilon = d.MaxEpsilon
	}
	return l
}

// Validate reports a limit that cannot be used (negative, or an empty ε
// range), naming its flag.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	for _, f := range []struct {
		flag string
		v    int
	}{{"--max-description-bytes", l.MaxDescriptionBytes}, {"--max-probe-points", l.MaxProbePoints},
		{"--max-probe-entries", l.MaxProbeEntries}, {"--max-fusion-iterations", l.MaxFusionIterations},
		{"--max-inner-iterations", l.MaxInnerIterations}, {"--max-irl-iterations", l.MaxIRLIterations}} {
		if f.v < 1 {
			return fmt.Errorf("%s %d: want ≥ 1", f.flag, f.v)
		}
	}
	if !(l.MinEpsilon > 0) || !(l.MaxEpsilon >= l.MinEpsilon) || math.IsInf(l.MaxEpsilon, 0) {
		return fmt.Errorf("--min-epsilon %g, --max-epsilon %g: want 0 < min ≤ max < ∞", l.MinEpsilon, l.MaxEpsilon)
	}
	return nil
}

// CheckSpec checks the fields of spec this package reads against l.
func (l Limits) CheckSpec(spec *TaskSpec) error {
	l = l.WithDefaults()
	if n := len(spec.Description); n > l.MaxDescriptionBytes {
		return fmt.Errorf("task spec %s: description is %d bytes, above the server's bound of %d (--max-description-bytes)", spec.ID, n, l.MaxDescriptionBytes)
	}
	return nil
}

// CheckProbe checks a probe's size, computed from its spec before it is
// built: points lattice points and features columns of Φ. A family calls it
// before building the probe.
func (l Limits) CheckProbe(points, features int) error {
	l = l.WithDefaults()
	if points < 0 || points > l.MaxProbePoints {
		return fmt.Errorf("probe: %d points, above the server's bound of %d (--max-probe-points)", points, l.MaxProbePoints)
	}
	if e := float64(points) * float64(features); e > float64(l.MaxProbeEntries) {
		return fmt.Errorf("probe: %d points × %d features = %.4g feature entries, above the server's bound of %d (--max-probe-entries)", points, features, e, l.MaxProbeEntries)
	}
	return nil
}

// CheckEpsilon checks the fusion's ε (field names it; 0 means the default
// and passes).
func (l Limits) CheckEpsilon(field string, eps float64) error {
	l = l.WithDefaults()
	if eps != 0 && !(eps >= l.MinEpsilon && eps <= l.MaxEpsilon) {
		return fmt.Errorf("%s = %g: outside the server's bounds [%g, %g] (--min-epsilon, --max-epsilon)", field, eps, l.MinEpsilon, l.MaxEpsilon)
	}
	return nil
}

// Iteration budgets named by CheckIterations.
const (
	FusionIterations = "fusion"
	InnerIterations  = "inner"
	IRLIterations    = "irl"
)

// CheckIterations checks an iteration budget n of kind FusionIterations,
// InnerIterations or IRLIterations; field names it in the error.
func (l Limits) CheckIterations(kind, field string, n int) error {
	l = l.WithDefaults()
	bound, flag := 0, ""
	switch kind {
	case FusionIterations:
		bound, flag = l.MaxFusionIterations, "--max-fusion-iterations"
	case InnerIterations:
		bound, flag = l.MaxInnerIterations, "--max-inner-iterations"
	case IRLIterations:
		bound, flag = l.MaxIRLIterations, "--max-irl-iterations"
	default:
		panic("federation: unknown iteration budget " + kind)
	}
	if n > bound {
		return fmt.Errorf("%s = %d: above the server's bound of %d (%s)", field, n, bound, flag)
	}
	return nil
}
