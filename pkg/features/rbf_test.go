package features

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/lattice"
)

// testRBF is a state–action spec with a periodic, an open and a categorical axis.
func testRBF() *RBFSpec {
	return &RBFSpec{Axes: []RBFAxis{
		UniformRBFAxis("theta", 4, 0, 2*math.Pi, 2*math.Pi),
		UniformRBFAxis("thdot", 3, -8, 8, 0),
		{Name: "action", Centres: []float64{0, 1}, Categorical: true},
	}, Extra: []ExtraFeature{
		{Kind: ExtraSquare, Axis: 0, Period: 2 * math.Pi},
		{Kind: ExtraSquare, Axis: 1, Scale: 0.125},
		{Kind: ExtraCos, Axis: 0},
		{Kind: ExtraSin, Axis: 1, Scale: 0.5},
		{Kind: ExtraSquare, Axis: 2},
		{Kind: ExtraAbs, Axis: 1, Scale: 0.5},
		{Kind: ExtraLinear, Axis: 1},
		{Kind: ExtraNorm, Axis: 0, With: 1, Scale: 0.25, Period: 2 * math.Pi},
	}, Bias: true}
}

// bruteRBF evaluates feature j of s at x straight from the definition,
// decoding j into its centre multi-index.
func bruteRBF(s *RBFSpec, j int, x []float64) float64 {
	if s.Bias && j == s.Dim()-1 {
		return 1
	}
	if n := s.NumCentres(); j >= n {
		e := s.Extra[j-n]
		u := x[e.Axis]
		w := 0.0
		if e.Kind == ExtraNorm {
			w = x[e.With]
		}
		if e.Period > 0 {
			u = math.Remainder(u, e.Period) // into [−P/2, P/2]
			w = math.Remainder(w, e.Period)
		}
		if e.Scale != 0 {
			u *= e.Scale
			w *= e.Scale
		}
		switch e.Kind {
		case ExtraAbs:
			return math.Abs(u)
		case ExtraLinear:
			return u
		case ExtraNorm:
			return math.Sqrt(u*u + w*w)
		case ExtraSquare:
			return u * u
		case ExtraCos:
			return math.Cos(u)
		}
		return math.Sin(u)
	}
	v := 1.0
	for k := len(s.Axes) - 1; k >= 0; k-- {
		a := s.Axes[k]
		i := j % len(a.Centres)
		j /= len(a.Centres)
		if a.Categorical {
			best := 0
			for c := range a.Centres {
				if math.Abs(x[k]-a.Centres[c]) < math.Abs(x[k]-a.Centres[best]) {
					best = c
				}
			}
			if best != i {
				v = 0
			}
			continue
		}
		d := math.Abs(x[k] - a.Centres[i])
		if a.Period > 0 {
			d = math.Mod(d, a.Period)
			d = math.Min(d, a.Period-d)
		}
		v *= math.Exp(-d * d / (2 * a.Bandwidth * a.Bandwidth))
	}
	return v
}

func randomPoint(rng *rand.Rand) []float64 {
	return []float64{-10 + 20*rng.Float64(), -10 + 20*rng.Float64(), float64(rng.IntN(2))}
}

func TestRBFEvalMatchesDefinition(t *testing.T) {
	s := testRBF()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Dim() != 4*3*2+8+1 || len(s.Names()) != s.Dim() || s.Names()[1] != "rbf[0,0,1]" || s.Names()[s.Dim()-1] != "bias" || s.Names()[24] != "square(theta)" {
		t.Fatalf("Dim %d, names %v", s.Dim(), s.Names())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	theta := make([]float64, s.Dim())
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	for range 200 {
		x := randomPoint(rng)
		phi := s.Eval(nil, x)
		want := make([]float64, s.Dim())
		for j := range want {
			want[j] = bruteRBF(s, j, x)
		}
		approx.Slices(t, "φ(x)", phi, want, 1e-14, 1e-12)
		approx.Equal(t, "θᵀφ(x)", s.Reward(theta, x), floats.Dot(theta, want), 1e-12, 1e-12)
	}
}

// TestRBFMatrixRowsArePointEvaluations checks the acceptance point: the
// reward evaluated at a lattice point (a cell centre) equals the
// corresponding row of the feature matrix times θ, with row s*A+a for the
// state–action pair.
func TestRBFMatrixRowsArePointEvaluations(t *testing.T) {
	s := testRBF()
	states := lattice.Lattice{Axes: []lattice.Axis{lattice.PeriodicAxis(7, 2*math.Pi), lattice.RangeAxis(5, -8, 8)}}
	actions := lattice.Lattice{Axes: []lattice.Axis{lattice.CategoricalAxis(2)}}
	phi, err := s.StateActionMatrix(states, actions)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := phi.Dims(); r != 7*5*2 || c != s.Dim() {
		t.Fatalf("matrix %d×%d, want %d×%d", r, c, 70, s.Dim())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	theta := make([]float64, s.Dim())
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	xs, xa := make([]float64, 2), make([]float64, 1)
	for st := range states.Len() {
		for a := range actions.Len() {
			states.Point(xs, st)
			actions.Point(xa, a)
			x := append(append([]float64(nil), xs...), xa...)
			row := phi.RawRowView(st*2 + a)
			approx.Slices(t, "row", row, s.Eval(nil, x), 0, 0)
			approx.Equal(t, "θᵀφ at the cell centre", s.Reward(theta, x), floats.Dot(theta, row), 1e-13, 1e-13)
		}
	}
}

func TestRBFPeriodicAndCategorical(t *testing.T) {
	s := testRBF()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		x := randomPoint(rng)
		y := append([]float64(nil), x...)
		y[0] += 2 * math.Pi * float64(rng.IntN(7)-3)
		approx.Slices(t, "φ(θ+2πk)", s.Eval(nil, y), s.Eval(nil, x), 1e-12, 1e-9)
		// the categorical factor is one-hot: features of the other action are 0
		phi := s.Eval(nil, x)
		a := int(x[2])
		for j := range s.NumCentres() {
			if j%2 != a && phi[j] != 0 {
				t.Fatalf("feature %d of action %d is %v, want 0", j, 1-a, phi[j])
			}
		}
	}
}

func TestRBFGradientFiniteDifferences(t *testing.T) {
	s := testRBF()
	rng := rand.New(rand.NewPCG(7, 8))
	theta := make([]float64, s.Dim())
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	const h = 1e-6
	for range 100 {
		x := randomPoint(rng)
		g := s.Gradient(nil, theta, x)
		for k, a := range s.Axes {
			if a.Categorical {
				if g[k] != 0 {
					t.Fatalf("gradient along the categorical axis = %v, want 0", g[k])
				}
				continue
			}
			xp := append([]float64(nil), x...)
			xm := append([]float64(nil), x...)
			xp[k] += h
			xm[k] -= h
			fd := (s.Reward(theta, xp) - s.Reward(theta, xm)) / (2 * h)
			approx.Equal(t, "∂θᵀφ/∂x_"+a.Name, g[k], fd, 1e-7, 1e-6)
		}
	}
}

func TestRBFRewardAllocatesNothing(t *testing.T) {
	s := testRBF()
	theta := make([]float64, s.Dim())
	x := []float64{0.3, 1.2, 1}
	dst := make([]float64, s.Dim())
	if n := testing.AllocsPerRun(100, func() { s.Reward(theta, x) }); n != 0 {
		t.Errorf("Reward allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Eval(dst, x) }); n != 0 {
		t.Errorf("Eval allocates %v times per call", n)
	}
}

func TestRBFSpecJSONRoundTrip(t *testing.T) {
	s := testRBF()
	var buf bytes.Buffer
	if err := WriteRBFSpec(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRBFSpec(bytes.NewReader(buf.Bytes()), "spec.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip changed the spec:\n got %+v\nwant %+v", got, s)
	}
	x := []float64{1.1, -2, 0}
	approx.Slices(t, "φ after round trip", got.Eval(nil, x), s.Eval(nil, x), 0, 0)
}

func TestRBFSpecErrors(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"no axes", `{"axes": [], "bias": true}`, "no axes"},
		{"no centres", `{"axes": [{"name": "x", "centres": [], "bandwidth": 1}]}`, "axes[0] (x): no centres"},
		{"zero bandwidth", `{"axes": [{"centres": [0, 1]}, {"name": "v", "centres": [0], "bandwidth": 0}]}`, "axes[0]: bandwidth 0"},
		{"negative bandwidth", `{"axes": [{"name": "v", "centres": [0], "bandwidth": -1}]}`, "axes[0] (v): bandwidth -1"},
		{"negative period", `{"axes": [{"centres": [0], "bandwidth": 1, "period": -6}]}`, "period -6"},
		{"periodic categorical", `{"axes": [{"centres": [0, 1], "categorical": true, "period": 2}]}`, "cannot be periodic"},
		{"duplicate category", `{"axes": [{"centres": [0, 1, 1], "categorical": true}]}`, "centres[1] and centres[2]"},
		{"unknown key", `{"axes": [{"centres": [0], "bandwidth": 1, "sigma": 2}]}`, "unknown field \"sigma\""},
		{"unknown extra", `{"axes": [{"centres": [0], "bandwidth": 1}], "extra": [{"kind": "cube", "axis": 0}]}`, "extra[0]: kind \"cube\""},
		{"norm without with", `{"axes": [{"centres": [0], "bandwidth": 1}, {"centres": [0], "bandwidth": 1}], "extra": [{"kind": "norm", "axis": 0}]}`, "second axis (with) 0"},
		{"with on abs", `{"axes": [{"centres": [0], "bandwidth": 1}, {"centres": [0], "bandwidth": 1}], "extra": [{"kind": "abs", "axis": 0, "with": 1}]}`, "with = 1 applies only"},
		{"not json", `{"axes": [`, "spec.json"},
		{"trailing", `{"axes": [{"centres": [0], "bandwidth": 1}]} {}`, "trailing data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadRBFSpec(strings.NewReader(c.json), "spec.json")
			if err == nil {
				t.Fatalf("no error for %s", c.json)
			}
			if !errors.Is(err, ErrRBFSpec) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "spec.json") {
				t.Fatalf("error %q: want ErrRBFSpec naming spec.json and containing %q", err, c.want)
			}
		})
	}
	// a lattice with the wrong number of axes
	s := testRBF()
	if _, err := s.Matrix(lattice.UniformLattice(1, 3, 3)); err == nil || !strings.Contains(err.Error(), "3 axes but the lattice has 2") {
		t.Fatalf("Matrix on a 2-axis lattice: error %v", err)
	}
	// NaN centres are caught by Validate (JSON cannot hold them)
	bad := &RBFSpec{Axes: []RBFAxis{{Centres: []float64{math.NaN()}, Bandwidth: 1}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "centres[0] = NaN") {
		t.Fatalf("NaN centre: error %v", err)
	}
}
