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
	"github.com/fedirl/fedirl/pkg/npy"
)

// PointsFamily is the generic family of tasks on a scattered probe
// ("points"): the probe is a finite set of points (s, a[, s′]) the task
// creator supplies as data — for example rollouts of a reference policy in
// the nominal simulator — rather than a lattice, for problems no lattice can
// reach. Its probe JSON (a PointProbe) carries the points, their cost
// weights and the feature map at the points. Clients submit their reward at
// the points (federation.Submission.Reward, from any model) or θ on the
// task's Φ; every reward-space fusion method runs on it unchanged
// (fusion.Probe.Points: the weighted squared-Euclidean cost between points).
// It has no lattice learner: a client's own model of the problem is its
// business; a client with a simulator learns θ with SampleLearner when the
// probe's features are an rbf map, which it evaluates at its own steps.
type PointsFamily struct{}

func init() { Register(PointsFamily{}) }

// PointsFamilyName is the env_family of the scattered-probe family.
const PointsFamilyName = "points"

// The bounds of a points task are fusion's: at most fusion.MaxProbePoints
// points of at most fusion.MaxProbeDim coordinates, and Φ within
// MaxPhiEntries. The task's probe JSON is bounded by federation.MaxProbeBytes
// as every family's, which binds first for most point sets.

// PointProbe is the probe JSON of a points task: exactly one source of the
// points and exactly one of their features.
//
//	points:       inline, one array of d coordinates per point (small probes);
//	points_npy:   the bytes of a float64 .npy array of shape (points, d), base64;
//	points_file:  a .npy file, relative to the spec file; `fedirl server task
//	              create` reads it and stores it as points_npy.
//	rbf:          a features.RBFSpec with one axis per coordinate, evaluated at the points;
//	phi, phi_npy, phi_file: Φ at the points, one row of features per point,
//	              as the lattice family's.
//
// CostWeights, when given, has one positive weight per coordinate
// (C(x, y) = Σ_k w_k (x_k − y_k)²; default all 1).
//
// A point's coordinates are a step of the task's simulator in its own
// spaces: the observation s, then the action a (a Discrete action as its
// index), then, for rewards of the transition, the next observation s′ —
// n_s + n_a or 2·n_s + n_a coordinates. Fusion reads them only as points;
// a client that evaluates the rbf map in its simulator (SampleLearner,
// PointFeatureMap) reads them in this order. Φ given as data (phi,
// phi_npy, phi_file) exists only at the points, so such a task takes
// rewards at the points or θ from clients that have Φ there, not from a
// sample-based learner.
type PointProbe struct {
	// Names labels the coordinates (documentation; one per coordinate when given).
	Names []string `json:"names,omitempty"`
	// Points are the probe's points inline, one row per point.
	Points [][]float64 `json:"points,omitempty"`
	// PointsNPY is the points as .npy bytes (base64 in JSON).
	PointsNPY []byte `json:"points_npy,omitempty"`
	// PointsFile names a .npy file holding the points; resolved by Resolve.
	PointsFile string `json:"points_file,omitempty"`
	// CostWeights are the per-coordinate weights of the fusion cost.
	CostWeights []float64 `json:"cost_weights,omitempty"`
	// RBF is the feature map as RBF centres over the coordinates.
	RBF *features.RBFSpec `json:"rbf,omitempty"`
	// Phi is Φ at the points inline, one row per point.
	Phi [][]float64 `json:"phi,omitempty"`
	// PhiNPY is Φ as .npy bytes (base64 in JSON).
	PhiNPY []byte `json:"phi_npy,omitempty"`
	// PhiFile names a .npy file holding Φ; resolved by Resolve.
	PhiFile string `json:"phi_file,omitempty"`
}

// Name implements Family.
func (PointsFamily) Name() string { return PointsFamilyName }

// Probe implements Family: it decodes a PointProbe and builds its probe.
func (PointsFamily) Probe(raw json.RawMessage) (fusion.Probe, error) {
	p, err := DecodePointProbe(raw)
	if err != nil {
		return fusion.Probe{}, err
	}
	return p.Build()
}

// DecodePointProbe reads a points probe, refusing unknown keys; a NaN or
// infinity written as Python's json.dump writes them is named by its place
// (points[12][3] = NaN).
func DecodePointProbe(raw []byte) (PointProbe, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p PointProbe
	if err := dec.Decode(&p); err != nil {
		if path, tok, ok := federation.NonFiniteJSON(raw); ok {
			return PointProbe{}, fmt.Errorf("%s = %s: JSON has no NaN or infinity (Python's json.dump writes them by default); want finite numbers", path, tok)
		}
		return PointProbe{}, fmt.Errorf("decoding points probe: %w", err)
	}
	if dec.More() {
		return PointProbe{}, fmt.Errorf("decoding points probe: data after the JSON object")
	}
	return p, nil
}

// Resolve replaces points_file and phi_file references by the files' bytes
// (points_npy, phi_npy); a relative path is taken relative to dir (the
// spec file's folder). Each array is checked to be a 2-D float64 .npy.
func (p *PointProbe) Resolve(dir string) error {
	for _, f := range []struct {
		field string
		file  *string
		dst   *[]byte
	}{{"points_file", &p.PointsFile, &p.PointsNPY}, {"phi_file", &p.PhiFile, &p.PhiNPY}} {
		if *f.file == "" {
			continue
		}
		path := *f.file
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.field, err)
		}
		if fi.Size() > 8*MaxPhiEntries+4096 {
			return fmt.Errorf("%s %s: %d bytes, more than an array of MaxPhiEntries = %d entries", f.field, path, fi.Size(), MaxPhiEntries)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.field, err)
		}
		if _, err := decodePhiNPY(raw); err != nil {
			return fmt.Errorf("%s %s: %w", f.field, path, err)
		}
		*f.dst, *f.file = raw, ""
	}
	return nil
}

// count returns how many of set are true.
func count(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// PointRows returns the probe's points, one row per point, checked: at most
// fusion.MaxProbePoints points, each of the dimension of points[0] (at most
// fusion.MaxProbeDim), every coordinate finite. The error names the field,
// the point and the coordinate.
func (p PointProbe) PointRows() ([][]float64, error) {
	switch count(p.Points != nil, p.PointsNPY != nil, p.PointsFile != "") {
	case 0:
		return nil, fmt.Errorf("points: no points (give points, points_npy or points_file)")
	case 1:
	default:
		return nil, fmt.Errorf("points: give exactly one of points, points_npy and points_file")
	}
	field := "points"
	rows := p.Points
	switch {
	case p.PointsFile != "":
		return nil, fmt.Errorf("points_file %q: a task must carry its points itself; `fedirl server task create --spec` inlines the file as points_npy", p.PointsFile)
	case p.PointsNPY != nil:
		field = "points_npy"
		a, err := npy.Decode(p.PointsNPY)
		if err != nil {
			return nil, fmt.Errorf("points_npy: %w", err)
		}
		if a.Dtype != npy.Float64 || len(a.Shape) != 2 {
			return nil, fmt.Errorf("points_npy: holds a %s array of shape %v, want float64 (points, coordinates)", a.Dtype, a.Shape)
		}
		n, d := a.Shape[0], a.Shape[1]
		if n > fusion.MaxProbePoints {
			return nil, fmt.Errorf("points_npy: %d points, more than the bound fusion.MaxProbePoints = %d", n, fusion.MaxProbePoints)
		}
		if d > fusion.MaxProbeDim {
			return nil, fmt.Errorf("points_npy: %d coordinates per point, more than the bound fusion.MaxProbeDim = %d", d, fusion.MaxProbeDim)
		}
		rows = make([][]float64, n)
		for i := range rows {
			rows[i] = a.Floats[i*d : (i+1)*d : (i+1)*d]
		}
	}
	n := len(rows)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%s: no points", field)
	case n > fusion.MaxProbePoints:
		return nil, fmt.Errorf("%s: %d points, more than the bound fusion.MaxProbePoints = %d", field, n, fusion.MaxProbePoints)
	}
	d := len(rows[0])
	switch {
	case d == 0:
		return nil, fmt.Errorf("%s[0]: no coordinates", field)
	case d > fusion.MaxProbeDim:
		return nil, fmt.Errorf("%s[0]: %d coordinates, more than the bound fusion.MaxProbeDim = %d", field, d, fusion.MaxProbeDim)
	}
	for i, x := range rows {
		if len(x) != d {
			return nil, fmt.Errorf("%s[%d]: %d coordinates, want %d (those of %s[0])", field, i, len(x), d, field)
		}
		for k, v := range x {
			if !finite(v) {
				return nil, fmt.Errorf("%s[%d][%d] = %v, want a finite coordinate", field, i, k, v)
			}
		}
	}
	if p.Names != nil && len(p.Names) != d {
		return nil, fmt.Errorf("names: %d names, the points have %d coordinates", len(p.Names), d)
	}
	if p.CostWeights != nil {
		if len(p.CostWeights) != d {
			return nil, fmt.Errorf("cost_weights: %d weights, the points have %d coordinates", len(p.CostWeights), d)
		}
		for k, w := range p.CostWeights {
			if !finite(w) || !(w > 0) {
				return nil, fmt.Errorf("cost_weights[%d] = %v, want a positive finite weight (omit cost_weights for all 1)", k, w)
			}
		}
	}
	return rows, nil
}

// Build validates p and returns its scattered fusion probe: the points with
// their cost weights and Φ at the points, checked finite and within the
// bounds (fusion.NewPointProbe).
func (p PointProbe) Build() (fusion.Probe, error) {
	rows, err := p.PointRows()
	if err != nil {
		return fusion.Probe{}, err
	}
	n, dim := len(rows), len(rows[0])
	if c := count(p.RBF != nil, p.Phi != nil, p.PhiNPY != nil, p.PhiFile != ""); c != 1 {
		return fusion.Probe{}, fmt.Errorf("give exactly one of rbf, phi, phi_npy and phi_file (got %d)", c)
	}
	var phi *mat.Dense
	switch {
	case p.PhiFile != "":
		return fusion.Probe{}, fmt.Errorf("phi_file %q: a task must carry Φ itself; `fedirl server task create --spec` inlines the file as phi_npy", p.PhiFile)
	case p.RBF != nil:
		if err := p.RBF.Validate(); err != nil {
			return fusion.Probe{}, fmt.Errorf("rbf: %w", err)
		}
		if len(p.RBF.Axes) != dim {
			return fusion.Probe{}, fmt.Errorf("rbf: %d axes, the points have %d coordinates", len(p.RBF.Axes), dim)
		}
		if p.RBF.StepDependent() {
			return fusion.Probe{}, fmt.Errorf("rbf: step-dependent features cannot be evaluated at points; give phi")
		}
		d := p.RBF.Dim()
		if n > MaxPhiEntries/d {
			return fusion.Probe{}, fmt.Errorf("rbf: Φ would have %d points × %d features, more than MaxPhiEntries = %d", n, d, MaxPhiEntries)
		}
		phi = mat.NewDense(n, d, nil)
		for i, x := range rows {
			p.RBF.Eval(phi.RawRowView(i), x)
		}
	case p.Phi != nil:
		if len(p.Phi) != n {
			return fusion.Probe{}, fmt.Errorf("phi: %d rows, the probe has %d points", len(p.Phi), n)
		}
		d := len(p.Phi[0])
		if d == 0 {
			return fusion.Probe{}, fmt.Errorf("phi[0] is empty")
		}
		if n > MaxPhiEntries/d {
			return fusion.Probe{}, fmt.Errorf("phi: %d points × %d features, more than MaxPhiEntries = %d", n, d, MaxPhiEntries)
		}
		phi = mat.NewDense(n, d, nil)
		for i, row := range p.Phi {
			if len(row) != d {
				return fusion.Probe{}, fmt.Errorf("phi[%d]: %d features, phi[0] has %d", i, len(row), d)
			}
			phi.SetRow(i, row)
		}
	default:
		a, err := decodePhiNPY(p.PhiNPY)
		if err != nil {
			return fusion.Probe{}, fmt.Errorf("phi_npy: %w", err)
		}
		if a.Shape[0] != n {
			return fusion.Probe{}, fmt.Errorf("phi_npy: %d rows, the probe has %d points", a.Shape[0], n)
		}
		phi = mat.NewDense(a.Shape[0], a.Shape[1], a.Floats)
	}
	r, _ := phi.Dims()
	for i := range r {
		for j, v := range phi.RawRowView(i) {
			if !finite(v) {
				return fusion.Probe{}, fmt.Errorf("Φ[%d][%d] (point %d, feature %d) is %v", i, j, i, j, v)
			}
		}
	}
	pr, err := fusion.NewPointProbe(phi, rows, p.CostWeights)
	if err != nil {
		return fusion.Probe{}, err
	}
	return pr, nil
}

// resolvePointFiles inlines a points probe's points_file and phi_file.
func resolvePointFiles(spec *federation.TaskSpec, dir string) error {
	p, err := DecodePointProbe(spec.Probe)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if p.PointsFile == "" && p.PhiFile == "" {
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
