package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/npy"
)

// LatticeFamily is the generic family ("lattice"): a task defined by data
// rather than by Go code. Its probe JSON (a LatticeProbe) carries the
// product lattice of states and actions and the feature map (an RBF spec
// over the lattice axes, or an explicit feature matrix Φ), so a federation
// can serve any problem its clients can put on a lattice, with no
// environment compiled into the server. Each client brings its own MDP on
// that lattice (the `fedirl irl` spec format or an .npz of sparse
// transitions); ClientFeatures checks its features against the task's Φ.
type LatticeFamily struct{}

func init() { Register(LatticeFamily{}) }

// LatticeFamilyName is the env_family of the generic family.
const LatticeFamilyName = "lattice"

// Bounds of a lattice task, checked when the task is created (the probe
// JSON itself is bounded by federation.MaxProbeBytes, which limits an
// inlined Φ to roughly 24 000 entries; larger problems use an RBF spec).
const (
	// MaxLatticePairs bounds the number of state–action pairs (the rows of Φ).
	MaxLatticePairs = 1 << 20
	// MaxPhiEntries bounds pairs × features, the size of Φ (128 MiB of float64).
	MaxPhiEntries = 1 << 24
	// MaxLatticeAxes bounds the number of state plus action axes.
	MaxLatticeAxes = 16
	// PhiTolerance is how far a client's feature entry may lie from the
	// task's: |φ_client − φ_task| ≤ PhiTolerance · max(1, |φ_task|). It
	// absorbs the last-bit differences of exp between NumPy and Go.
	PhiTolerance = 1e-9
)

// LatticeAxis is one axis of a lattice task, in one of four kinds:
//
//	uniform:      {"n": 24, "lo": -1.2, "hi": 0.6}           n evenly spaced points, lo and hi included
//	periodic:     {"n": 16, "lo": -3.14159, "hi": 3.14159, "periodic": true}
//	                                                          n points lo + j(hi−lo)/n, period hi − lo
//	explicit:     {"coords": [0, 0.5, 2]}                    strictly increasing coordinates
//	categorical:  {"n": 3, "categorical": true}              indices 0…n−1, distance 0 or 1
//
// Weight multiplies the axis' squared distance in the fusion cost; when
// omitted it is 1/h² with h the smallest gap between neighbouring points
// (so one lattice step along any axis costs 1, as in the control family),
// and 1 on a categorical or single-point axis.
type LatticeAxis struct {
	// Name labels the coordinate (documentation and error messages).
	Name string `json:"name,omitempty"`
	// N is the number of points of a uniform, periodic or categorical axis.
	N int `json:"n,omitempty"`
	// Lo and Hi bound a uniform or periodic axis.
	Lo float64 `json:"lo,omitempty"`
	Hi float64 `json:"hi,omitempty"`
	// Periodic wraps a uniform axis with period Hi − Lo.
	Periodic bool `json:"periodic,omitempty"`
	// Categorical makes the axis a set of N indices.
	Categorical bool `json:"categorical,omitempty"`
	// Coords are the coordinates of an explicit axis.
	Coords []float64 `json:"coords,omitempty"`
	// Weight is the axis' cost weight (see the type comment); nil means the
	// default, and an explicit weight must be positive.
	Weight *float64 `json:"weight,omitempty"`
}

// LatticeProbe is the probe JSON of a lattice task: the state axes and the
// action axes (points numbered row-major, last axis fastest; pair row
// s·A + a) and exactly one feature source:
//
//	"rbf":      a features.RBFSpec with one axis per state axis, then per action axis;
//	"phi":      Φ inline, one row of d numbers per state–action pair (small tasks);
//	"phi_npy":  the bytes of a float64 .npy array of shape (pairs, d), base64;
//	"phi_file": a .npy file, relative to the spec file; `fedirl server task
//	            create` reads it and stores it as phi_npy (a server never
//	            reads files named by a task).
type LatticeProbe struct {
	// State lists the state axes.
	State []LatticeAxis `json:"state"`
	// Action lists the action axes.
	Action []LatticeAxis `json:"action"`
	// RBF is the feature map as RBF centres over the lattice axes.
	RBF *features.RBFSpec `json:"rbf,omitempty"`
	// Phi is the feature matrix inline, one row per pair.
	Phi [][]float64 `json:"phi,omitempty"`
	// PhiNPY is the feature matrix as .npy bytes (base64 in JSON).
	PhiNPY []byte `json:"phi_npy,omitempty"`
	// PhiFile names a .npy file holding Φ; resolved by Resolve.
	PhiFile string `json:"phi_file,omitempty"`
}

// Name implements Family.
func (LatticeFamily) Name() string { return LatticeFamilyName }

// Probe implements Family: it decodes a LatticeProbe and builds its probe.
func (LatticeFamily) Probe(raw json.RawMessage) (fusion.Probe, error) {
	p, err := DecodeLatticeProbe(raw)
	if err != nil {
		return fusion.Probe{}, err
	}
	return p.Build()
}

// DecodeLatticeProbe reads a lattice probe, refusing unknown keys.
func DecodeLatticeProbe(raw []byte) (LatticeProbe, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p LatticeProbe
	if err := dec.Decode(&p); err != nil {
		return LatticeProbe{}, fmt.Errorf("decoding lattice probe: %w", err)
	}
	if dec.More() {
		return LatticeProbe{}, fmt.Errorf("decoding lattice probe: data after the JSON object")
	}
	return p, nil
}

// Resolve replaces a phi_file reference by the file's bytes (phi_npy); a
// relative path is taken relative to dir (the spec file's folder). The
// array is checked to be a 2-D float64 .npy.
func (p *LatticeProbe) Resolve(dir string) error {
	if p.PhiFile == "" {
		return nil
	}
	path := p.PhiFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("lattice probe: phi_file: %w", err)
	}
	if fi.Size() > 8*MaxPhiEntries+4096 {
		return fmt.Errorf("lattice probe: phi_file %s: %d bytes, more than a Φ of MaxPhiEntries = %d entries", path, fi.Size(), MaxPhiEntries)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("lattice probe: phi_file: %w", err)
	}
	if _, err := decodePhiNPY(raw); err != nil {
		return fmt.Errorf("lattice probe: phi_file %s: %w", path, err)
	}
	p.PhiNPY, p.PhiFile = raw, ""
	return nil
}

// axis builds the lattice axis of a; where names it in errors.
func (a LatticeAxis) axis(where string) (lattice.Axis, error) {
	if a.Name != "" {
		where = fmt.Sprintf("%s (%s)", where, a.Name)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	var ax lattice.Axis
	switch {
	case a.Coords != nil:
		if a.N != 0 || a.Lo != 0 || a.Hi != 0 || a.Periodic || a.Categorical {
			return ax, fmt.Errorf("%s: an explicit axis (coords) takes no n, lo, hi, periodic or categorical", where)
		}
		if len(a.Coords) == 0 {
			return ax, fmt.Errorf("%s: coords is empty", where)
		}
		for i, c := range a.Coords {
			if !finite(c) {
				return ax, fmt.Errorf("%s: coords[%d] = %v is not finite", where, i, c)
			}
			if i > 0 && !(c > a.Coords[i-1]) {
				return ax, fmt.Errorf("%s: coords[%d] = %v does not increase on coords[%d] = %v", where, i, c, i-1, a.Coords[i-1])
			}
		}
		ax = lattice.Axis{Coords: append([]float64(nil), a.Coords...)}
	case a.N < 1 || a.N > MaxLatticePairs:
		return ax, fmt.Errorf("%s: n = %d points, want 1..MaxLatticePairs = %d (or give coords)", where, a.N, MaxLatticePairs)
	case a.Categorical:
		if a.Periodic || a.Lo != 0 || a.Hi != 0 {
			return ax, fmt.Errorf("%s: a categorical axis takes no lo, hi or periodic", where)
		}
		ax = lattice.CategoricalAxis(a.N)
	case !finite(a.Lo) || !finite(a.Hi) || !(a.Lo < a.Hi) || !finite(a.Hi-a.Lo):
		return ax, fmt.Errorf("%s: need finite lo < hi, got lo = %v, hi = %v", where, a.Lo, a.Hi)
	case a.Periodic:
		ax = lattice.PeriodicAxis(a.N, a.Hi-a.Lo)
		for i := range ax.Coords {
			ax.Coords[i] += a.Lo
		}
	default:
		ax = lattice.RangeAxis(a.N, a.Lo, a.Hi)
	}
	if a.Weight != nil {
		if w := *a.Weight; !finite(w) || !(w > 0) {
			return ax, fmt.Errorf("%s: weight %v must be a positive finite number (omit it for the default)", where, w)
		}
		ax.Weight = *a.Weight
	}
	if a.Weight == nil && !ax.Categorical && ax.Len() > 1 {
		h := math.Inf(1)
		for i := 1; i < ax.Len(); i++ {
			h = math.Min(h, ax.Coords[i]-ax.Coords[i-1])
		}
		if ax.Period > 0 {
			h = math.Min(h, ax.Period-(ax.Coords[ax.Len()-1]-ax.Coords[0]))
		}
		ax.Weight = 1 / (h * h)
		if math.IsInf(ax.Weight, 0) {
			return ax, fmt.Errorf("%s: points %v apart are too close for a default weight; give weight", where, h)
		}
	}
	return ax, ax.Validate()
}

// Lattices returns the validated state and action lattices of p.
func (p LatticeProbe) Lattices() (states, actions lattice.Lattice, err error) {
	switch {
	case len(p.State) == 0:
		return states, actions, fmt.Errorf("lattice probe: state: no axes")
	case len(p.Action) == 0:
		return states, actions, fmt.Errorf("lattice probe: action: no axes")
	case len(p.State)+len(p.Action) > MaxLatticeAxes:
		return states, actions, fmt.Errorf("lattice probe: %d state and %d action axes, at most %d in all", len(p.State), len(p.Action), MaxLatticeAxes)
	}
	pairs := 1
	for _, side := range []struct {
		name string
		axes []LatticeAxis
		dst  *lattice.Lattice
	}{{"state", p.State, &states}, {"action", p.Action, &actions}} {
		for k, a := range side.axes {
			ax, err := a.axis(fmt.Sprintf("lattice probe: %s[%d]", side.name, k))
			if err != nil {
				return states, actions, err
			}
			if pairs > MaxLatticePairs/ax.Len() {
				return states, actions, fmt.Errorf("lattice probe: %s[%d]: the lattice has more than MaxLatticePairs = %d state–action pairs", side.name, k, MaxLatticePairs)
			}
			pairs *= ax.Len()
			side.dst.Axes = append(side.dst.Axes, ax)
		}
	}
	return states, actions, nil
}

// Build validates p and returns its fusion probe: the pair lattice (state
// axes, then action axes) and Φ on it, checked finite and within the bounds.
func (p LatticeProbe) Build() (fusion.Probe, error) {
	states, actions, err := p.Lattices()
	if err != nil {
		return fusion.Probe{}, err
	}
	pairs := states.Len() * actions.Len()
	sources := 0
	for _, set := range []bool{p.RBF != nil, p.Phi != nil, p.PhiNPY != nil, p.PhiFile != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return fusion.Probe{}, fmt.Errorf("lattice probe: give exactly one of rbf, phi, phi_npy and phi_file (got %d)", sources)
	}
	var phi *mat.Dense
	switch {
	case p.PhiFile != "":
		return fusion.Probe{}, fmt.Errorf("lattice probe: phi_file %q: a task must carry Φ itself; `fedirl server task create --spec` inlines the file as phi_npy", p.PhiFile)
	case p.RBF != nil:
		if err := p.RBF.Validate(); err != nil {
			return fusion.Probe{}, fmt.Errorf("lattice probe: rbf: %w", err)
		}
		if n, want := len(p.RBF.Axes), len(p.State)+len(p.Action); n != want {
			return fusion.Probe{}, fmt.Errorf("lattice probe: rbf has %d axes, the lattice %d state and %d action axes", n, len(p.State), len(p.Action))
		}
		if d := p.RBF.Dim(); pairs > MaxPhiEntries/d {
			return fusion.Probe{}, fmt.Errorf("lattice probe: Φ would have %d pairs × %d features, more than MaxPhiEntries = %d", pairs, d, MaxPhiEntries)
		}
		if phi, err = p.RBF.StateActionMatrix(states, actions); err != nil {
			return fusion.Probe{}, fmt.Errorf("lattice probe: rbf: %w", err)
		}
	case p.Phi != nil:
		if len(p.Phi) != pairs {
			return fusion.Probe{}, fmt.Errorf("lattice probe: phi has %d rows, the lattice %d state–action pairs", len(p.Phi), pairs)
		}
		d := len(p.Phi[0])
		if d == 0 {
			return fusion.Probe{}, fmt.Errorf("lattice probe: phi[0] is empty")
		}
		phi = mat.NewDense(pairs, d, nil)
		for k, row := range p.Phi {
			if len(row) != d {
				return fusion.Probe{}, fmt.Errorf("lattice probe: phi[%d] has %d entries, phi[0] %d", k, len(row), d)
			}
			phi.SetRow(k, row)
		}
	default:
		a, err := decodePhiNPY(p.PhiNPY)
		if err != nil {
			return fusion.Probe{}, fmt.Errorf("lattice probe: phi_npy: %w", err)
		}
		if a.Shape[0] != pairs {
			return fusion.Probe{}, fmt.Errorf("lattice probe: phi_npy has %d rows, the lattice %d state–action pairs", a.Shape[0], pairs)
		}
		phi = mat.NewDense(a.Shape[0], a.Shape[1], a.Floats)
	}
	r, d := phi.Dims()
	for i := range r {
		for j, v := range phi.RawRowView(i) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fusion.Probe{}, fmt.Errorf("lattice probe: Φ[%d][%d] (state %d, action %d, feature %d) is %v", i, j, i/actions.Len(), i%actions.Len(), j, v)
			}
		}
	}
	if r > MaxPhiEntries/d {
		return fusion.Probe{}, fmt.Errorf("lattice probe: Φ has %d × %d entries, more than MaxPhiEntries = %d", r, d, MaxPhiEntries)
	}
	pair := lattice.Lattice{Axes: append(append([]lattice.Axis(nil), states.Axes...), actions.Axes...)}
	return fusion.Probe{Phi: phi, Lattice: pair}, nil
}

// decodePhiNPY decodes a 2-D float64 .npy array within MaxPhiEntries.
func decodePhiNPY(raw []byte) (*npy.Array, error) {
	a, err := npy.Decode(raw)
	if err != nil {
		return nil, err
	}
	if a.Dtype != npy.Float64 || len(a.Shape) != 2 {
		return nil, fmt.Errorf("holds a %s array of shape %v, want float64 (pairs, features)", a.Dtype, a.Shape)
	}
	if a.Shape[0] == 0 || a.Shape[1] == 0 {
		return nil, fmt.Errorf("has shape %v, want at least one pair and one feature", a.Shape)
	}
	if a.Len() > MaxPhiEntries {
		return nil, fmt.Errorf("has %d entries, more than MaxPhiEntries = %d", a.Len(), MaxPhiEntries)
	}
	return a, nil
}

// ClientFeatures implements FeatureChecker: the client's MDP must have the
// task's actions, its first S states must be the lattice's states (any
// further states terminal with zero feature rows, e.g. a goal or crash
// state), and its features must be the task's Φ: the same number of columns
// and every entry within PhiTolerance. The error names the first mismatch.
// It returns the matrix to learn with: the task's Φ, zero rows appended.
func (LatticeFamily) ClientFeatures(raw json.RawMessage, m *mdp.MDP, phi *mat.Dense) (*mat.Dense, error) {
	p, err := DecodeLatticeProbe(raw)
	if err != nil {
		return nil, err
	}
	pr, err := p.Build()
	if err != nil {
		return nil, err
	}
	states, actions, _ := p.Lattices()
	S, A := states.Len(), actions.Len()
	if err := checkClientModel(m, S, A); err != nil {
		return nil, err
	}
	rows, d := pr.Phi.Dims()
	cr, cd := phi.Dims()
	switch {
	case cd != d:
		return nil, fmt.Errorf("client features: %d columns, the task's Φ has %d", cd, d)
	case cr != m.NumStates*m.NumActions:
		return nil, fmt.Errorf("client features: %d rows for %d×%d state–action pairs", cr, m.NumStates, m.NumActions)
	}
	for s := S; s < m.NumStates; s++ {
		for a := range A {
			for j, v := range phi.RawRowView(s*A + a) {
				if v != 0 {
					return nil, fmt.Errorf("client features[%d][%d] = %v: extra terminal state %d must have zero features", s*A+a, j, v, s)
				}
			}
		}
	}
	for k := range rows {
		want, got := pr.Phi.RawRowView(k), phi.RawRowView(k)
		for j := range d {
			if math.Abs(got[j]-want[j]) > PhiTolerance*math.Max(1, math.Abs(want[j])) {
				return nil, fmt.Errorf("client features[%d][%d] = %v (state %d, action %d, feature %d), the task's Φ has %v", k, j, got[j], k/A, k%A, j, want[j])
			}
		}
	}
	out := mat.NewDense(cr, d, nil)
	out.Slice(0, rows, 0, d).(*mat.Dense).Copy(pr.Phi)
	return out, nil
}

// checkClientModel checks that a client's MDP has the task lattice's A
// actions and S states first, any further states terminal.
func checkClientModel(m *mdp.MDP, S, A int) error {
	switch {
	case m.NumActions != A:
		return fmt.Errorf("client MDP: actions = %d, the task's lattice has %d action points", m.NumActions, A)
	case m.NumStates < S:
		return fmt.Errorf("client MDP: states = %d, the task's lattice has %d state points (extra terminal states may follow them)", m.NumStates, S)
	}
	for s := S; s < m.NumStates; s++ {
		if !m.IsTerminal(s) {
			return fmt.Errorf("client MDP: state %d lies beyond the task's %d lattice states and is not terminal", s, S)
		}
	}
	return nil
}

// ProbePairs implements ProbeModel: the client's MDP must have the task's
// actions and its first S states must be the lattice's states (further
// states terminal); the probe's points are then its first S·A pairs.
func (LatticeFamily) ProbePairs(raw json.RawMessage, m *mdp.MDP) (int, error) {
	p, err := DecodeLatticeProbe(raw)
	if err != nil {
		return 0, err
	}
	states, actions, err := p.Lattices()
	if err != nil {
		return 0, err
	}
	if err := checkClientModel(m, states.Len(), actions.Len()); err != nil {
		return 0, err
	}
	return states.Len() * actions.Len(), nil
}

// ProbeModel is implemented by families whose probe support is the first
// state–action pairs of a client's own model (row s·A + a), so that a client
// with its own reward model can evaluate it there: ProbePairs checks the
// client's model against the task's probe JSON (not its features) and
// returns the number of probe points.
type ProbeModel interface {
	ProbePairs(probe json.RawMessage, m *mdp.MDP) (int, error)
}

// FeatureChecker is implemented by families whose clients bring their own
// MDP and must prove that its features are the task's: ClientFeatures
// checks the client's model and features against the task's probe JSON and
// returns the feature matrix to learn with, or an error naming the first
// mismatch.
type FeatureChecker interface {
	ClientFeatures(probe json.RawMessage, m *mdp.MDP, phi *mat.Dense) (*mat.Dense, error)
}

// ResolveProbeFiles inlines the files a task spec's probe refers to (a
// lattice probe's phi_file, a points probe's points_file and phi_file,
// relative to dir), so that the stored task is self-contained; other
// families' probes are left as they are.
func ResolveProbeFiles(spec *federation.TaskSpec, dir string) error {
	if spec.EnvFamily == PointsFamilyName {
		return resolvePointFiles(spec, dir)
	}
	if spec.EnvFamily != LatticeFamilyName {
		return nil
	}
	p, err := DecodeLatticeProbe(spec.Probe)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if p.PhiFile == "" {
		return nil
	}
	if err := p.Resolve(dir); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	spec.Probe = b
	return nil
}
