package features

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/lattice"
)

// RBFAxis is one factor of the product grid of RBF centres: the centres'
// coordinates along one state or action coordinate and the kernel along it.
type RBFAxis struct {
	// Name labels the coordinate (for example "theta"); it is documentation only.
	Name string `json:"name,omitempty"`
	// Centres are the centre coordinates along this axis.
	Centres []float64 `json:"centres"`
	// Bandwidth is the kernel width σ along this axis (> 0); unused when Categorical.
	Bandwidth float64 `json:"bandwidth,omitempty"`
	// Period, when > 0, makes the axis periodic (angles: 2π): distances are
	// wrapped into [−Period/2, Period/2].
	Period float64 `json:"period,omitempty"`
	// Categorical makes the factor an indicator: 1 for the centre nearest to
	// the coordinate (ties to the first), 0 for the others; for discrete
	// actions this is a one-hot encoding.
	Categorical bool `json:"categorical,omitempty"`
}

// RBFSpec describes radial-basis-function features on a product grid of
// centres: feature j, for the centre c_j with multi-index (j_1, …, j_D), is
//
//	φ_j(x) = Π_k g_k(x_k, c_{k,j_k}),   g_k(x, c) = exp(−½ (d_k(x, c)/σ_k)²),
//
// with d_k the plain difference, or the wrapped one on a periodic axis, and
// g_k an indicator on a categorical axis. Features are numbered row-major over
// the centre grid (last axis fastest); with Bias a constant 1 is appended as
// the last feature. A point x has one coordinate per axis, in axis order
// (state coordinates first, then action coordinates, for state–action
// features). The spec is plain JSON (ReadRBFSpec, WriteRBFSpec).
//
// An RBFSpec is read-only after Validate and safe for concurrent use.
type RBFSpec struct {
	// Axes are the factors of the centre grid, slowest first.
	Axes []RBFAxis `json:"axes"`
	// Extra lists analytic columns of single coordinates (squares, cosines,
	// sines), appended after the RBF columns and before the bias: a smooth
	// reward such as Pendulum's −(θ² + 0.1θ̇² + 0.001u²) is then in the span
	// of the features exactly, which a few dozen Gaussians cannot reach.
	Extra []ExtraFeature `json:"extra,omitempty"`
	// HeldLander, when set, appends LunarLander's held-step block
	// (HeldLander) after the extra features and before the bias.
	HeldLander *HeldLander `json:"held_lander,omitempty"`
	// Bias appends a constant feature 1.
	Bias bool `json:"bias"`
	// NoProduct leaves the product grid's columns out: the features are
	// then the extra features, the HeldLander block and the bias, and the
	// axes only name and order the point's coordinates. (Even a grid of
	// single centres gives a column, a constant one: a bias.)
	NoProduct bool `json:"no_product,omitempty"`
}

// ErrRBFSpec is wrapped by every error about an invalid RBF spec.
var ErrRBFSpec = errors.New("invalid RBF spec")

// maxRBFCentres bounds the total number of centres over all axes, so point
// evaluation can keep its per-axis factors in a fixed stack buffer.
const maxRBFCentres = 512

// maxRBFFeatures bounds the number of features (the product of the axis sizes).
const maxRBFFeatures = 1 << 20

// Validate returns an error wrapping ErrRBFSpec that names the first
// offending axis and field, or nil.
func (s *RBFSpec) Validate() error {
	if len(s.Axes) == 0 {
		return fmt.Errorf("%w: no axes", ErrRBFSpec)
	}
	if len(s.Axes) > maxRBFAxes {
		return fmt.Errorf("%w: %d axes, at most %d are supported", ErrRBFSpec, len(s.Axes), maxRBFAxes)
	}
	total, prod := 0, 1
	for k, a := range s.Axes {
		where := fmt.Sprintf("axes[%d]", k)
		if a.Name != "" {
			where += fmt.Sprintf(" (%s)", a.Name)
		}
		if len(a.Centres) == 0 {
			return fmt.Errorf("%w: %s: no centres", ErrRBFSpec, where)
		}
		for i, c := range a.Centres {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				return fmt.Errorf("%w: %s: centres[%d] = %v is not finite", ErrRBFSpec, where, i, c)
			}
		}
		if math.IsNaN(a.Period) || math.IsInf(a.Period, 0) || a.Period < 0 {
			return fmt.Errorf("%w: %s: period %v must be a non-negative finite number", ErrRBFSpec, where, a.Period)
		}
		if a.Categorical {
			if a.Period != 0 {
				return fmt.Errorf("%w: %s: a categorical axis cannot be periodic", ErrRBFSpec, where)
			}
			for i := range a.Centres {
				for j := range i {
					if a.Centres[i] == a.Centres[j] {
						return fmt.Errorf("%w: %s: categorical centres[%d] and centres[%d] are both %v", ErrRBFSpec, where, j, i, a.Centres[i])
					}
				}
			}
		} else if !(a.Bandwidth > 0) || math.IsInf(a.Bandwidth, 0) {
			return fmt.Errorf("%w: %s: bandwidth %v must be positive and finite", ErrRBFSpec, where, a.Bandwidth)
		}
		total += len(a.Centres)
		prod *= len(a.Centres)
		if total > maxRBFCentres || prod > maxRBFFeatures {
			return fmt.Errorf("%w: too many centres (%d over the axes, %d features; limits %d and %d)", ErrRBFSpec, total, prod, maxRBFCentres, maxRBFFeatures)
		}
	}
	if s.HeldLander != nil {
		if err := s.HeldLander.Validate(len(s.Axes)); err != nil {
			return err
		}
	}
	if s.NoProduct && s.Dim() == 0 {
		return fmt.Errorf("%w: no_product without extra, held or bias features: no feature", ErrRBFSpec)
	}
	if len(s.Extra) > maxRBFExtra {
		return fmt.Errorf("%w: %d extra features, at most %d", ErrRBFSpec, len(s.Extra), maxRBFExtra)
	}
	for i, e := range s.Extra {
		where := fmt.Sprintf("extra[%d]", i)
		switch {
		case !slices.Contains(extraKinds, e.Kind):
			return fmt.Errorf("%w: %s: kind %q, want one of %s", ErrRBFSpec, where, e.Kind, strings.Join(extraKinds, ", "))
		case e.Axis < 0 || e.Axis >= len(s.Axes):
			return fmt.Errorf("%w: %s: axis %d out of range [0, %d)", ErrRBFSpec, where, e.Axis, len(s.Axes))
		case e.Kind == ExtraNorm && (e.With <= e.Axis || e.With >= len(s.Axes)):
			return fmt.Errorf("%w: %s: a norm's second axis (with) %d must be in (%d, %d)", ErrRBFSpec, where, e.With, e.Axis, len(s.Axes))
		case e.Kind != ExtraNorm && e.With != 0:
			return fmt.Errorf("%w: %s: with = %d applies only to kind %q", ErrRBFSpec, where, e.With, ExtraNorm)
		case math.IsNaN(e.Scale) || math.IsInf(e.Scale, 0) || e.Scale < 0:
			return fmt.Errorf("%w: %s: scale %v must be a non-negative finite number", ErrRBFSpec, where, e.Scale)
		case math.IsNaN(e.Period) || math.IsInf(e.Period, 0) || e.Period < 0:
			return fmt.Errorf("%w: %s: period %v must be a non-negative finite number", ErrRBFSpec, where, e.Period)
		}
	}
	return nil
}

// heldCols returns the number of columns of the HeldLander block (0 without one).
func (s *RBFSpec) heldCols() int {
	if s.HeldLander == nil {
		return 0
	}
	return len(s.HeldLander.Terms)
}

// maxRBFExtra bounds the number of extra analytic features.
const maxRBFExtra = 64

// NumCentres returns the number of RBF features, the product of the axis
// sizes (0 with NoProduct).
func (s *RBFSpec) NumCentres() int {
	if s.NoProduct {
		return 0
	}
	n := 1
	for _, a := range s.Axes {
		n *= len(a.Centres)
	}
	return n
}

// Dim returns the number of features: NumCentres, plus the extra
// features, plus HeldLander's block, plus one with Bias (always the last
// feature).
func (s *RBFSpec) Dim() int {
	n := s.NumCentres() + len(s.Extra) + s.heldCols()
	if s.Bias {
		return n + 1
	}
	return n
}

// Names returns one label per feature: "rbf[i,j,…]" with the centre's
// multi-index, "square(theta)" and the like for the extra features, and "bias".
func (s *RBFSpec) Names() []string {
	out := make([]string, 0, s.Dim())
	idx := make([]int, len(s.Axes))
	parts := make([]string, len(s.Axes))
	for range s.NumCentres() {
		for k, i := range idx {
			parts[k] = fmt.Sprint(i)
		}
		out = append(out, "rbf["+strings.Join(parts, ",")+"]")
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(s.Axes[k].Centres) {
				break
			}
			idx[k] = 0
		}
	}
	for i := range s.Extra {
		out = append(out, s.Extra[i].name(s.Axes))
	}
	if s.HeldLander != nil {
		out = append(out, s.HeldLander.names()...)
	}
	if s.Bias {
		out = append(out, "bias")
	}
	return out
}

// UniformRBFAxis returns an axis of n centres at the midpoints of n equal
// cells of [lo, hi], with bandwidth equal to the cell width; with period > 0
// (use lo = 0, hi = period) the axis is periodic.
func UniformRBFAxis(name string, n int, lo, hi, period float64) RBFAxis {
	if n < 1 || !(lo < hi) {
		panic(fmt.Sprintf("features: UniformRBFAxis(%q, %d, %g, %g): need n ≥ 1 and lo < hi", name, n, lo, hi))
	}
	h := (hi - lo) / float64(n)
	c := make([]float64, n)
	for i := range c {
		c[i] = lo + (float64(i)+0.5)*h
	}
	return RBFAxis{Name: name, Centres: c, Bandwidth: h, Period: period}
}

// diff returns the signed difference x − c along axis a (wrapped into
// [−P/2, P/2] on a periodic axis).
func (a *RBFAxis) diff(x, c float64) float64 {
	d := x - c
	if a.Period > 0 {
		d -= a.Period * math.Round(d/a.Period)
	}
	return d
}

// factors writes g_k(x, c_i) for every centre i of the axis into g and, when
// dg is not nil, the derivatives ∂g/∂x into dg (0 on a categorical axis).
func (a *RBFAxis) factors(g, dg []float64, x float64) {
	if a.Categorical {
		best, bd := 0, math.Inf(1)
		for i, c := range a.Centres {
			if d := math.Abs(x - c); d < bd {
				best, bd = i, d
			}
		}
		for i := range g {
			g[i] = 0
		}
		g[best] = 1
		if dg != nil {
			clear(dg)
		}
		return
	}
	inv := 1 / a.Bandwidth
	for i, c := range a.Centres {
		u := a.diff(x, c) * inv
		g[i] = math.Exp(-0.5 * u * u)
		if dg != nil {
			dg[i] = -u * inv * g[i]
		}
	}
}

// product runs over the centre grid (last axis fastest) forming the products
// p_j = Π_k f_k(j_k) of the per-axis factors, which are consecutive blocks of
// f (axis altAxis's block replaced by alt when alt is not nil). With dst it
// stores p_j in dst[j] and returns 0; otherwise it returns Σ_j θ_j p_j.
func (s *RBFSpec) product(dst, theta, f, alt []float64, altAxis int) float64 {
	D := len(s.Axes)
	var off, idx [maxRBFAxes]int
	var prefix [maxRBFAxes + 1]float64
	o := 0
	for k, a := range s.Axes {
		off[k] = o
		o += len(a.Centres)
	}
	fac := func(k, i int) float64 {
		if k == altAxis && alt != nil {
			return alt[i]
		}
		return f[off[k]+i]
	}
	prefix[0] = 1
	for k := range D {
		prefix[k+1] = prefix[k] * fac(k, 0)
	}
	n := s.NumCentres()
	sum := 0.0
	for j := 0; j < n; j++ {
		if dst != nil {
			dst[j] = prefix[D]
		} else {
			sum += theta[j] * prefix[D]
		}
		k := D - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(s.Axes[k].Centres) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
		for i := k; i < D; i++ {
			prefix[i+1] = prefix[i] * fac(i, idx[i])
		}
	}
	return sum
}

// maxRBFAxes bounds the number of axes (the stack buffers of contract).
const maxRBFAxes = 16

func (s *RBFSpec) checkPoint(x []float64) {
	if len(x) != len(s.Axes) {
		panic(fmt.Sprintf("features: RBF point has %d coordinates, want %d axes", len(x), len(s.Axes)))
	}
	if len(s.Axes) > maxRBFAxes {
		panic(fmt.Sprintf("features: RBF spec has %d axes, at most %d are supported", len(s.Axes), maxRBFAxes))
	}
}

// Eval writes φ(x) (length Dim) into dst, allocating it when nil or of the
// wrong length, and returns it. The spec must be valid.
func (s *RBFSpec) Eval(dst, x []float64) []float64 {
	dst = s.evalPoint(dst, x)
	if s.HeldLander != nil {
		s.HeldLander.eval(s.heldCol(dst), x)
	}
	return dst
}

// evalPoint writes every column of φ(x) but the HeldLander block's into
// dst (allocating it as Eval does) and returns it.
func (s *RBFSpec) evalPoint(dst, x []float64) []float64 {
	s.checkPoint(x)
	if len(dst) != s.Dim() {
		dst = make([]float64, s.Dim())
	}
	var buf [maxRBFCentres]float64
	o := 0
	for k := range s.Axes {
		n := len(s.Axes[k].Centres)
		s.Axes[k].factors(buf[o:o+n], nil, x[k])
		o += n
	}
	s.product(dst, nil, buf[:o], nil, -1)
	n := s.NumCentres()
	for i := range s.Extra {
		dst[n+i], _, _ = s.Extra[i].value(x)
	}
	n += len(s.Extra)
	if s.Bias {
		dst[n+s.heldCols()] = 1
	}
	return dst
}

// Reward returns θᵀφ(x) without allocating (the spec must be valid and θ of
// length Dim); this is the learned reward r(x) that a policy optimizer
// queries at continuous state–action points.
func (s *RBFSpec) Reward(theta, x []float64) float64 {
	r := s.pointReward(theta, x)
	if s.HeldLander != nil {
		var h [maxHeldLanderCols]float64
		c := s.heldCols()
		s.HeldLander.eval(h[:c], x)
		r += floats.Dot(s.heldCol(theta), h[:c])
	}
	return r
}

// pointReward returns θᵀφ(x) over every column but the HeldLander block's.
func (s *RBFSpec) pointReward(theta, x []float64) float64 {
	s.checkPoint(x)
	if len(theta) != s.Dim() {
		panic(fmt.Sprintf("features: RBF θ has length %d, want %d", len(theta), s.Dim()))
	}
	var buf [maxRBFCentres]float64
	o := 0
	for k := range s.Axes {
		n := len(s.Axes[k].Centres)
		s.Axes[k].factors(buf[o:o+n], nil, x[k])
		o += n
	}
	r := s.product(nil, theta, buf[:o], nil, -1)
	n := s.NumCentres()
	for i := range s.Extra {
		v, _, _ := s.Extra[i].value(x)
		r += theta[n+i] * v
	}
	if s.Bias {
		r += theta[n+len(s.Extra)+s.heldCols()]
	}
	return r
}

// heldCol returns the entries of v (θ, or a feature vector) of the
// HeldLander block's columns.
func (s *RBFSpec) heldCol(v []float64) []float64 {
	n := s.NumCentres() + len(s.Extra)
	return v[n : n+s.heldCols()]
}

// Gradient writes ∇_x θᵀφ(x) (one entry per axis; 0 along categorical axes)
// into dst, allocating it when nil or of the wrong length, and returns it.
// Along a periodic axis the derivative is that of the wrapped distance, which
// is undefined only at the antipode of a centre.
func (s *RBFSpec) Gradient(dst, theta, x []float64) []float64 {
	s.checkPoint(x)
	if len(theta) != s.Dim() {
		panic(fmt.Sprintf("features: RBF θ has length %d, want %d", len(theta), s.Dim()))
	}
	if len(dst) != len(s.Axes) {
		dst = make([]float64, len(s.Axes))
	}
	var buf, dbuf [maxRBFCentres]float64
	o := 0
	for k := range s.Axes {
		n := len(s.Axes[k].Centres)
		s.Axes[k].factors(buf[o:o+n], dbuf[o:o+n], x[k])
		o += n
	}
	o = 0
	for k, a := range s.Axes {
		n := len(a.Centres)
		if a.Categorical {
			dst[k] = 0
		} else {
			dst[k] = s.product(nil, theta, buf[:], dbuf[o:o+n], k)
		}
		o += n
	}
	nc := s.NumCentres()
	for i := range s.Extra {
		e := &s.Extra[i]
		_, dv, dw := e.value(x)
		if !s.Axes[e.Axis].Categorical {
			dst[e.Axis] += theta[nc+i] * dv
		}
		if e.Kind == ExtraNorm && !s.Axes[e.With].Categorical {
			dst[e.With] += theta[nc+i] * dw
		}
	}
	if h := s.HeldLander; h != nil {
		// Central differences: the prediction is a Box2D-style recurrence
		// of several frames, smooth away from the throttles' thresholds.
		c := s.heldCols()
		th := theta[nc+len(s.Extra) : nc+len(s.Extra)+c]
		var y [maxRBFAxes]float64
		var hp, hm [maxHeldLanderCols]float64
		for k, a := range s.Axes {
			if a.Categorical {
				continue
			}
			const eps = 1e-6
			copy(y[:], x)
			y[k] = x[k] + eps
			h.eval(hp[:c], y[:len(x)])
			y[k] = x[k] - eps
			h.eval(hm[:c], y[:len(x)])
			for i := range c {
				dst[k] += th[i] * (hp[i] - hm[i]) / (2 * eps)
			}
		}
	}
	return dst
}

// Matrix returns the l.Len() × Dim feature matrix with row i = φ(point i of
// l); l must have one axis per spec axis. For state–action features pass the
// product lattice of the state axes followed by the action axes (see
// StateActionMatrix), so that row s*A+a is the pair (s, a).
func (s *RBFSpec) Matrix(l lattice.Lattice) (*mat.Dense, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(l.Axes) != len(s.Axes) {
		return nil, fmt.Errorf("features: RBF spec has %d axes but the lattice has %d", len(s.Axes), len(l.Axes))
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("features: RBF matrix: %w", err)
	}
	n, d := l.Len(), s.Dim()
	phi := mat.NewDense(n, d, nil)
	x := make([]float64, len(l.Axes))
	for i := range n {
		s.Eval(phi.RawRowView(i), l.Point(x, i))
	}
	return phi, nil
}

// StateActionMatrix returns the (S·A) × Dim matrix with row s*A+a equal to
// φ(state point s, action point a), for a spec whose axes are the state axes
// followed by the action axes.
func (s *RBFSpec) StateActionMatrix(states, actions lattice.Lattice) (*mat.Dense, error) {
	axes := make([]lattice.Axis, 0, len(states.Axes)+len(actions.Axes))
	axes = append(append(axes, states.Axes...), actions.Axes...)
	return s.Matrix(lattice.Lattice{Axes: axes})
}

// ReadRBFSpec decodes a JSON RBF spec from r (unknown keys are errors) and
// validates it; path names the source in errors.
func ReadRBFSpec(r io.Reader, path string) (*RBFSpec, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var s RBFSpec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrRBFSpec, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: %w: trailing data after the spec", path, ErrRBFSpec)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// WriteRBFSpec writes s as indented JSON to w after validating it.
func WriteRBFSpec(w io.Writer, s *RBFSpec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
