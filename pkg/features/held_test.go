package features

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/lattice"
)

// heldSpec is a LunarLander-shaped spec (8 observation and 2 action axes)
// with two Gaussian centres on x, one wide one on each other coordinate of
// the observation's first six, |angle|, the held block and a bias.
func heldSpec(frames int) *RBFSpec {
	s := &RBFSpec{Axes: make([]RBFAxis, 10), HeldLander: &HeldLander{Frames: frames, Terms: HeldLanderTerms[:8]}, Bias: true,
		Extra: []ExtraFeature{{Kind: ExtraAbs, Axis: 4}}}
	for k := range s.Axes {
		s.Axes[k] = RBFAxis{Centres: []float64{0}, Categorical: true}
	}
	s.Axes[0] = UniformRBFAxis("ll-x", 2, -1, 1, 0)
	for k := 1; k < 6; k++ { // wide Gaussians: the gradient looks along them
		s.Axes[k] = RBFAxis{Centres: []float64{0}, Bandwidth: 10}
	}
	return s
}

// TestPredictLanderClosedForms: the prediction's recurrence against its
// closed forms in world units (W/2 = 10 m, H/2 = 20/3 m, 50 frames/s):
// engines off, k frames of semi-implicit Euler under gravity g give
// Y′ = Y + k·VY·dt + g·dt²·k(k+1)/2 and VY′ = VY + k·g·dt, X′ = X + k·VX·dt,
// θ′ = θ + k·ω·dt; the main engine at full throttle, upright and not
// turning, adds its speed change every frame along y (along −x when tilted
// by π/2); one frame of a side engine upright adds its speed change along
// x and turns the lander by its torque over the inertia.
func TestPredictLanderClosedForms(t *testing.T) {
	const dt, g, hw, hh, fps = 1.0 / 50, -10.0, 10.0, 20.0 / 3, 50.0
	world := func(o []float64) (X, Y, VX, VY, th, om float64) {
		return o[0] * hw, o[1] * hh, o[2] * fps / hw, o[3] * fps / hh, o[4], o[5] * fps / 20
	}
	obs := []float64{0.3, 1.1, -0.2, -0.4, 0.1, 0.15}
	X, Y, VX, VY, th, om := world(obs)
	var p [6]float64
	for _, k := range []int{1, 3, 8} {
		kk := float64(k)
		PredictLander(p[:], obs, -0.5, 0.2, k) // both engines off
		pX, pY, pVX, pVY, pth, pom := world(p[:])
		tri := kk * (kk + 1) / 2
		approx.Equal(t, "engines off: X′", pX, X+kk*VX*dt, 1e-12, 1e-12)
		approx.Equal(t, "engines off: Y′", pY, Y+kk*VY*dt+g*dt*dt*tri, 1e-12, 1e-12)
		approx.Equal(t, "engines off: VX′", pVX, VX, 1e-12, 1e-12)
		approx.Equal(t, "engines off: VY′", pVY, VY+kk*g*dt, 1e-12, 1e-12)
		approx.Equal(t, "engines off: θ′", pth, th+kk*om*dt, 1e-12, 1e-12)
		approx.Equal(t, "engines off: ω′", pom, om, 1e-12, 1e-12)

		up := []float64{0.3, 1.1, -0.2, -0.4, 0, 0}
		PredictLander(p[:], up, 1, 0, k)
		_, uY, _, uVY, _, _ := world(up)
		_, qY, _, qVY, qth, _ := world(p[:])
		a := landerMainDV + g*dt // speed change per frame
		approx.Equal(t, "main upright: VY′", qVY, uVY+kk*a, 1e-12, 1e-12)
		approx.Equal(t, "main upright: Y′", qY, uY+kk*uVY*dt+a*dt*tri, 1e-12, 1e-12)
		approx.Equal(t, "main upright: θ′", qth, 0, 0, 0)

		tilt := []float64{0.3, 1.1, -0.2, -0.4, math.Pi / 2, 0}
		PredictLander(p[:], tilt, 1, 0, k)
		tX, _, tVX, _, _, _ := world(tilt)
		qX, _, qVX, _, _, _ := world(p[:])
		approx.Equal(t, "main tilted: VX′", qVX, tVX-kk*landerMainDV, 1e-12, 1e-12)
		approx.Equal(t, "main tilted: X′", qX, tX+kk*tVX*dt-landerMainDV*dt*tri, 1e-12, 1e-12)
	}
	for _, dir := range []float64{-1, 1} {
		up := []float64{0.3, 1.1, -0.2, -0.4, 0, 0}
		PredictLander(p[:], up, 0, dir, 1)
		_, _, uVX, _, _, _ := world(up)
		_, _, qVX, _, qth, qom := world(p[:])
		torque := -dir * 0.6 * (12.0 / 30) * (14.0/30 - 0.10131) // the arm upright: 14 pixels less the centroid
		approx.Equal(t, "side upright: VX′", qVX, uVX+dir*landerSideDV, 1e-12, 1e-12)
		approx.Equal(t, "side upright: ω′", qom, torque/landerInertia, 1e-12, 1e-12)
		approx.Equal(t, "side upright: θ′", qth, torque/landerInertia*dt, 1e-12, 1e-12)
	}
}

// TestLanderThrottles: Gymnasium's throttles at the lattice's levels and
// between them (the simulator check is in package lunar).
func TestLanderThrottles(t *testing.T) {
	for _, c := range []struct{ main, lat, m, s float64 }{
		{-1, -1, 0, -1}, {0, 0, 0, 0}, {1, 1, 1, 1}, {0.5, 0.5, 0.75, 0}, {0.01, -0.6, 0.505, -0.6}, {3, -0.51, 1, -0.51},
	} {
		m, s := LanderThrottles(c.main, c.lat)
		approx.Equal(t, "main throttle", m, c.m, 1e-15, 0)
		approx.Equal(t, "side throttle", s, c.s, 1e-15, 0)
	}
}

// TestHeldLanderColumns: the block's columns, through Eval, Matrix and
// Reward, are the changes of ‖(x, y)‖, ‖(ẋ, ẏ)‖ and |angle| from the point
// to its PredictLander successor and the throttles, at random points; the
// gradient matches finite differences; a block of some terms holds those
// columns; and a bad block (no frames, wrong axes, no, unknown or repeated
// terms) is refused.
func TestHeldLanderColumns(t *testing.T) {
	s := heldSpec(8)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Dim(), 2+1+8+1; got != want {
		t.Fatalf("Dim %d, want %d", got, want)
	}
	if names := s.Names(); names[3] != "held8 distance" || names[11] != "bias" {
		t.Fatalf("names %q", names)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	theta := make([]float64, s.Dim())
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	x := make([]float64, 10)
	touched, offs := 0, 0
	for range 200 {
		for k := range x {
			x[k] = 2*rng.Float64() - 1
		}
		x[6], x[7] = float64(rng.IntN(2)), float64(rng.IntN(2))
		phi := s.Eval(nil, x)
		var p [6]float64
		PredictLander(p[:], x, x[8], x[9], 8)
		m, sd := LanderThrottles(x[8], x[9])
		touch, off := 0.0, 0.0
		if p[1] <= 0 && x[6]+x[7] == 0 {
			touch = 1
			touched++
		}
		if math.Abs(p[0]) >= 1 {
			off = 1
			offs++
		}
		want := []float64{math.Hypot(p[0], p[1]) - math.Hypot(x[0], x[1]), math.Hypot(p[2], p[3]) - math.Hypot(x[2], x[3]),
			math.Abs(p[4]) - math.Abs(x[4]), m, math.Abs(sd), touch, touch * math.Hypot(p[2], p[3]), off}
		for i, w := range want {
			approx.Equal(t, s.Names()[3+i], phi[3+i], w, 1e-15, 0)
		}
		approx.Equal(t, "bias", phi[11], 1, 0, 0)
		r := 0.0
		for i, v := range phi {
			r += theta[i] * v
		}
		approx.Equal(t, "Reward", s.Reward(theta, x), r, 1e-12, 1e-12)
		// Finite differences away from the throttles' thresholds.
		if math.Abs(x[8]) > 0.01 && math.Abs(math.Abs(x[9])-0.5) > 0.01 {
			grad := s.Gradient(nil, theta, x)
			for k := range 6 {
				const h = 1e-5
				y := append([]float64(nil), x...)
				y[k] += h
				up := s.Reward(theta, y)
				y[k] -= 2 * h
				fd := (up - s.Reward(theta, y)) / (2 * h)
				approx.Equal(t, "gradient", grad[k], fd, 1e-4, 1e-4)
			}
		}
	}
	some := heldSpec(8)
	some.HeldLander.Terms = []string{"off_screen", "speed"}
	full := heldSpec(8)
	for range 20 {
		for k := range x {
			x[k] = 2*rng.Float64() - 1
		}
		a, b := some.Eval(nil, x), full.Eval(nil, x)
		if len(a) != 2+1+2+1 || a[3] != b[3+7] || a[4] != b[3+1] {
			t.Fatalf("terms [off_screen speed]: columns %v of %v", a, b)
		}
	}
	if touched == 0 || offs == 0 {
		t.Fatalf("the random points reached the pad's height %d times and left the screen %d times; want both", touched, offs)
	}
	// A lattice's rows are the point evaluations.
	l := lattice.Lattice{Axes: make([]lattice.Axis, 10)}
	for k := range l.Axes {
		l.Axes[k] = lattice.Axis{Coords: []float64{0}}
	}
	l.Axes[1].Coords = []float64{0.2, 1.2}
	l.Axes[4].Coords = []float64{-0.3, 0.3}
	l.Axes[8].Coords = []float64{-1, 0, 1}
	l.Axes[9].Coords = []float64{-1, 0, 1}
	phi, err := s.Matrix(l)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Len() {
		row := s.Eval(nil, l.Point(make([]float64, 10), i))
		for j, v := range row {
			approx.Equal(t, "matrix row", phi.At(i, j), v, 0, 0)
		}
	}
	for _, bad := range []*RBFSpec{
		{Axes: heldSpec(8).Axes, HeldLander: &HeldLander{Frames: 0, Terms: []string{"speed"}}},
		{Axes: heldSpec(8).Axes[:9], HeldLander: &HeldLander{Frames: 8, Terms: []string{"speed"}}},
		{Axes: heldSpec(8).Axes, HeldLander: &HeldLander{Frames: 8}},
		{Axes: heldSpec(8).Axes, HeldLander: &HeldLander{Frames: 8, Terms: []string{"speed", "height"}}},
		{Axes: heldSpec(8).Axes, HeldLander: &HeldLander{Frames: 8, Terms: []string{"speed", "speed"}}},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrRBFSpec) {
			t.Errorf("held block %+v on %d axes: error %v, want ErrRBFSpec", *bad.HeldLander, len(bad.Axes), err)
		}
	}
}

// TestNoProduct: with no_product the features are the extra columns, the
// held block and the bias alone, the same values as those columns of the
// spec with its product grid; a spec left with no feature is refused.
func TestNoProduct(t *testing.T) {
	full := heldSpec(8)
	bare := heldSpec(8)
	bare.NoProduct = true
	if err := bare.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := bare.Dim(), full.Dim()-full.NumCentres(); got != want || bare.NumCentres() != 0 {
		t.Fatalf("Dim %d (centres %d), want %d", got, bare.NumCentres(), want)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	x := make([]float64, 10)
	for range 20 {
		for k := range x {
			x[k] = 2*rng.Float64() - 1
		}
		a, b := bare.Eval(nil, x), full.Eval(nil, x)
		for j, v := range a {
			approx.Equal(t, bare.Names()[j], v, b[full.NumCentres()+j], 0, 0)
		}
		theta := make([]float64, bare.Dim())
		theta[len(theta)-1] = 2
		approx.Equal(t, "Reward of the bias", bare.Reward(theta, x), 2, 0, 0)
	}
	empty := &RBFSpec{Axes: heldSpec(8).Axes, NoProduct: true}
	if err := empty.Validate(); !errors.Is(err, ErrRBFSpec) {
		t.Errorf("no_product without any other feature: error %v, want ErrRBFSpec", err)
	}
}
