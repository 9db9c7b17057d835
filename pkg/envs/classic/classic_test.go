package classic

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs"
)

func mustMake(t testing.TB, name string, params map[string]float64) Stateful {
	t.Helper()
	e, err := MakeWithParams(name, params)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustSet(t testing.TB, e Stateful, s ...float64) {
	t.Helper()
	if err := e.SetState(s); err != nil {
		t.Fatal(err)
	}
}

// TestPendulumClosedForm checks single Pendulum steps against hand-derived values.
func TestPendulumClosedForm(t *testing.T) {
	const g, dt = 10.0, 0.05
	tests := []struct {
		name        string
		params      map[string]float64
		th, thd, u  float64
		wantThd     float64 // expected θ̇ after the step
		wantReward  float64
		wantClipped bool
	}{
		{"rest torque 1", nil, 0, 0, 1, 3 * 1 * dt, -0.001, false},
		{"torque clipped 5->2", nil, 0, 0, 5, 3 * 2 * dt, -0.001 * 4, false},
		{"torque clipped -7->-2", nil, 0, 0, -7, -3 * 2 * dt, -0.001 * 4, false},
		{"horizontal falls", nil, math.Pi / 2, 0, 0, 1.5 * g * dt, -(math.Pi / 2) * (math.Pi / 2), false},
		{"velocity cost", nil, 0, 2, 0, 2, -0.1 * 4, false},
		{"angle wraps 3π/2 -> -π/2", nil, 3 * math.Pi / 2, 0, 0, 1.5 * g * dt * math.Sin(3*math.Pi/2), -(math.Pi / 2) * (math.Pi / 2), false},
		{"angle wraps 2π+0.1 -> 0.1", nil, 2*math.Pi + 0.1, 0, 0, 1.5 * g * dt * math.Sin(2*math.Pi+0.1), -0.1 * 0.1, false},
		{"angle -π -> -π", nil, -math.Pi, 0, 0, 1.5 * g * dt * math.Sin(-math.Pi), -math.Pi * math.Pi, false},
		{"speed clipped at +8", nil, math.Pi / 2, 7.99, 2, 8, -((math.Pi/2)*(math.Pi/2) + 0.1*7.99*7.99 + 0.004), true},
		{"speed clipped at -8", nil, -math.Pi / 2, -7.99, -2, -8, -((math.Pi/2)*(math.Pi/2) + 0.1*7.99*7.99 + 0.004), true},
		{"damping b=0.4", map[string]float64{"damping": 0.4}, 0, 1, 0, 1 - 3*0.4*1*dt, -0.1, false},
		{"torque scale 1.5", map[string]float64{"torque_scale": 1.5}, 0, 0, 2, 3 * 3 * dt, -0.001 * 9, false},
		{"gravity 11.81", map[string]float64{"g": 11.81}, math.Pi / 2, 0, 0, 1.5 * 11.81 * dt, -(math.Pi / 2) * (math.Pi / 2), false},
		{"m=2 l=0.5", map[string]float64{"m": 2, "l": 0.5}, 0, 0, 1, 3 / (2 * 0.25) * dt, -0.001, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, "Pendulum-v1", tc.params)
			mustSet(t, e, tc.th, tc.thd)
			obs, r, term, trunc := e.Step([]float64{tc.u})
			s := e.State(nil)
			approx.Equal(t, "thetadot", s[1], tc.wantThd, 1e-12, 1e-12)
			approx.Equal(t, "theta", s[0], tc.th+tc.wantThd*dt, 1e-12, 1e-12)
			approx.Equal(t, "reward", r, tc.wantReward, 1e-12, 1e-12)
			approx.Slices(t, "obs", obs, []float64{math.Cos(s[0]), math.Sin(s[0]), s[1]}, 0, 0)
			if term || trunc {
				t.Errorf("terminated/truncated %v/%v after one step", term, trunc)
			}
			if tc.wantClipped && math.Abs(s[1]) != 8 {
				t.Errorf("|θ̇| = %v, want clipped to 8", s[1])
			}
		})
	}
}

// TestPendulumTruncation checks the 200-step TimeLimit and that the episode never terminates.
func TestPendulumTruncation(t *testing.T) {
	e := mustMake(t, "Pendulum-v1", nil)
	e.Reset(1)
	for k := 1; k <= 200; k++ {
		_, _, term, trunc := e.Step([]float64{1})
		if term {
			t.Fatalf("terminated at step %d", k)
		}
		if trunc != (k == 200) {
			t.Fatalf("step %d truncated = %v", k, trunc)
		}
	}
	assertPanics(t, "Step after truncation", func() { e.Step([]float64{0}) })
}

// cartPoleAccel solves the cart-pole equations of motion written as a linear
// system in (ẍ, θ̈) (Florian 2007, frictionless, pole of half-length l as a
// uniform rod): M ẍ + m l cos θ θ̈ = F + m l θ̇² sin θ and
// cos θ ẍ + (4/3) l θ̈ = g sin θ, by Cramer's rule.
func cartPoleAccel(g, mc, mp, l, force, theta, thetaDot float64) (xacc, thetaacc float64) {
	M := mc + mp
	a11, a12, b1 := M, mp*l*math.Cos(theta), force+mp*l*thetaDot*thetaDot*math.Sin(theta)
	a21, a22, b2 := math.Cos(theta), 4.0/3.0*l, g*math.Sin(theta)
	det := a11*a22 - a12*a21
	return (b1*a22 - a12*b2) / det, (a11*b2 - a21*b1) / det
}

// TestCartPoleEquationsOfMotion compares one Euler step with the accelerations
// of the independently solved equations of motion, at default and perturbed
// parameters, for both integrators.
func TestCartPoleEquationsOfMotion(t *testing.T) {
	client4, err := ClientParams("CartPole-v1", 4)
	if err != nil {
		t.Fatal(err)
	}
	delete(client4, "obs_noise_std")
	paramSets := []map[string]float64{nil, client4, {"semi_implicit": 1}}
	states := [][]float64{{0, 0, 0, 0}, {0.3, -0.7, 0.15, 1.2}, {-1.9, 1.1, -0.2, -2.5}, {2.0, 0.1, 0.19, 0.05}}
	for pi, params := range paramSets {
		e := mustMake(t, "CartPole-v1", params)
		p := e.Params()
		tau := p["tau"]
		for si, s0 := range states {
			for a := range 2 {
				mustSet(t, e, s0...)
				e.Step([]float64{float64(a)})
				s := e.State(nil)
				force := p["force_mag"] * float64(2*a-1)
				xacc, thacc := cartPoleAccel(p["gravity"], p["masscart"], p["masspole"], p["length"], force, s0[2], s0[3])
				want := []float64{s0[0] + tau*s0[1], s0[1] + tau*xacc, s0[2] + tau*s0[3], s0[3] + tau*thacc}
				if p["semi_implicit"] == 1 {
					want[0] = s0[0] + tau*want[1]
					want[2] = s0[2] + tau*want[3]
				}
				if err := approx.SlicesErr(s, want, 1e-12, 1e-12); err != nil {
					t.Errorf("params %d state %d action %d: %v", pi, si, a, err)
				}
			}
		}
	}
	// At rest, the push gives θ̈ = −F/(l(4M/3 − m_p)).
	e := mustMake(t, "CartPole-v1", nil)
	mustSet(t, e, 0, 0, 0, 0)
	e.Step([]float64{1})
	approx.Equal(t, "θ̇ after push", e.State(nil)[3], 0.02*(-10/(0.5*(4*1.1/3-0.1))), 1e-12, 1e-12)
}

// TestCartPoleTermination covers the ±2.4 and ±12° bounds, the reward of 1 on
// the terminating step and simultaneous termination and truncation.
func TestCartPoleTermination(t *testing.T) {
	thr := 12 * 2 * math.Pi / 360
	tests := []struct {
		name     string
		s0       []float64
		action   float64
		wantTerm bool
	}{
		{"inside", []float64{2.39, 0, 0, 0}, 1, false},
		{"x exits right", []float64{2.39, 1, 0, 0}, 1, true},       // x' = 2.41
		{"x exits left", []float64{-2.39, -1, 0, 0}, 0, true},      // x' = -2.41
		{"x exactly 2.4 stays", []float64{2.4, 0, 0, 0}, 1, false}, // x' = 2.4, not > 2.4
		{"theta exits", []float64{0, 0, thr - 0.001, 0.1}, 1, true},
		{"theta exits negative", []float64{0, 0, -thr + 0.001, -0.1}, 0, true},
		{"theta inside", []float64{0, 0, thr - 0.01, 0.1}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, "CartPole-v1", nil)
			mustSet(t, e, tc.s0...)
			_, r, term, trunc := e.Step([]float64{tc.action})
			if term != tc.wantTerm || trunc {
				t.Errorf("terminated/truncated %v/%v, want %v/false (state %v)", term, trunc, tc.wantTerm, e.State(nil))
			}
			if r != 1 {
				t.Errorf("reward %v, want 1", r)
			}
		})
	}
	// Terminating on the last allowed step sets both flags, as Gymnasium's TimeLimit does.
	e := mustMake(t, "CartPole-v1", map[string]float64{"max_episode_steps": 1})
	mustSet(t, e, 2.39, 1, 0, 0)
	if _, _, term, trunc := e.Step([]float64{1}); !term || !trunc {
		t.Errorf("terminated/truncated %v/%v, want true/true", term, trunc)
	}
}

// acrobotAccel solves the acrobot's Lagrangian equations M(q) q̈ = τ e2 − C(q, q̇) − G(q)
// (Spong; Sutton & Barto's "book" dynamics) by Cramer's rule, independently of dsdt's arrangement.
func acrobotAccel(m1, m2, l1, lc1, lc2, I, g, tau float64, q []float64) (dd1, dd2 float64) {
	t1, t2, w1, w2 := q[0], q[1], q[2], q[3]
	M11 := m1*lc1*lc1 + m2*(l1*l1+lc2*lc2+2*l1*lc2*math.Cos(t2)) + 2*I
	M12 := m2*(lc2*lc2+l1*lc2*math.Cos(t2)) + I
	M22 := m2*lc2*lc2 + I
	h := m2 * l1 * lc2 * math.Sin(t2)
	C1 := -h*w2*w2 - 2*h*w1*w2
	C2 := h * w1 * w1
	G1 := (m1*lc1+m2*l1)*g*math.Sin(t1) + m2*lc2*g*math.Sin(t1+t2)
	G2 := m2 * lc2 * g * math.Sin(t1+t2)
	b1, b2 := -C1-G1, tau-C2-G2
	det := M11*M22 - M12*M12
	return (b1*M22 - M12*b2) / det, (M11*b2 - M12*b1) / det
}

// TestAcrobotEquationsOfMotion compares the derivative Step integrates with the
// Lagrangian accelerations, at default and client parameters.
func TestAcrobotEquationsOfMotion(t *testing.T) {
	client5, err := ClientParams("Acrobot-v1", 5)
	if err != nil {
		t.Fatal(err)
	}
	delete(client5, "obs_noise_std")
	states := [][]float64{{0, 0, 0, 0}, {0.5, -1.2, 2.0, -3.0}, {3.0, 2.5, -6, 10}, {-2.2, 0.3, 1.5, 0.2}}
	for pi, params := range []map[string]float64{nil, client5} {
		e := mustMake(t, "Acrobot-v1", params).(*Acrobot)
		for si, q := range states {
			for a := range 3 {
				tau := e.torqueScale * float64(a-1)
				d := e.dsdt(&[5]float64{q[0], q[1], q[2], q[3], tau})
				dd1, dd2 := acrobotAccel(e.m1, e.m2, e.l1, e.lc1, e.lc2, e.moi, e.g, tau, q)
				got := []float64{d[0], d[1], d[2], d[3], d[4]}
				want := []float64{q[2], q[3], dd1, dd2, 0}
				if err := approx.SlicesErr(got, want, 1e-12, 1e-11); err != nil {
					t.Errorf("params %d state %d action %d: %v", pi, si, a, err)
				}
			}
		}
	}
}

// acrobotEnergy is the mechanical energy of the acrobot (θ1 = 0 hanging down).
func acrobotEnergy(p map[string]float64, q []float64) float64 {
	m1, m2, l1 := p["link_mass_1"], p["link_mass_2"], p["link_length_1"]
	lc1, lc2, I, g := p["link_com_pos_1"], p["link_com_pos_2"], p["link_moi"], p["g"]
	t1, t2, w1, w2 := q[0], q[1], q[2], q[3]
	M11 := m1*lc1*lc1 + m2*(l1*l1+lc2*lc2+2*l1*lc2*math.Cos(t2)) + 2*I
	M12 := m2*(lc2*lc2+l1*lc2*math.Cos(t2)) + I
	M22 := m2*lc2*lc2 + I
	T := 0.5 * (M11*w1*w1 + 2*M12*w1*w2 + M22*w2*w2)
	V := -(m1*lc1+m2*l1)*g*math.Cos(t1) - m2*lc2*g*math.Cos(t1+t2)
	return T + V
}

// TestAcrobotEnergyConservation checks that with zero torque the RK4 steps
// conserve mechanical energy (to RK4's O(dt⁴) accuracy), a physical check
// independent of how the equations are arranged.
func TestAcrobotEnergyConservation(t *testing.T) {
	params := map[string]float64{"dt": 0.01, "max_vel_1": 100, "max_vel_2": 100, "goal_height": 10, "max_episode_steps": 1000}
	e := mustMake(t, "Acrobot-v1", params)
	p := e.Params()
	q0 := []float64{1.0, -0.5, 0.3, 0.8}
	mustSet(t, e, q0...)
	E0 := acrobotEnergy(p, q0)
	for k := 0; k < 1000; k++ {
		e.Step([]float64{1}) // zero torque
	}
	approx.Equal(t, "energy after 10 s", acrobotEnergy(p, e.State(nil)), E0, 1e-7, 1e-7)
}

// TestAcrobotEdgeCases covers the goal height, angle wrapping, velocity
// clipping and the torque of each action.
func TestAcrobotEdgeCases(t *testing.T) {
	e := mustMake(t, "Acrobot-v1", nil)

	// Upright: tip height 2 > 1: terminated with reward 0.
	mustSet(t, e, math.Pi, 0, 0, 0)
	if _, r, term, _ := e.Step([]float64{1}); !term || r != 0 {
		t.Errorf("upright: terminated %v reward %v, want true 0", term, r)
	}
	// Horizontal links: tip height ≈ 0: reward −1.
	mustSet(t, e, math.Pi/2, 0, 0, 0)
	if _, r, term, _ := e.Step([]float64{1}); term || r != -1 {
		t.Errorf("horizontal: terminated %v reward %v, want false -1", term, r)
	}
	// Goal height boundary: −cos θ1 − cos(θ1+θ2) must exceed 1 strictly.
	// θ1 = 2π/3, θ2 = 0 gives height 1 (up to rounding); nudge either way with a frozen state (dt tiny).
	frozen := mustMake(t, "Acrobot-v1", map[string]float64{"dt": 1e-12})
	for _, tc := range []struct {
		th1  float64
		want bool
	}{{2*math.Pi/3 - 1e-6, false}, {2*math.Pi/3 + 1e-6, true}} {
		mustSet(t, frozen, tc.th1, 0, 0, 0)
		if _, _, term, _ := frozen.Step([]float64{1}); term != tc.want {
			t.Errorf("θ1 = %v: terminated %v, want %v", tc.th1, term, tc.want)
		}
	}
	// Wrapping: θ1 just below π moving forward ends up just above −π.
	mustSet(t, e, math.Pi-0.01, 0, 2, 0)
	e.Step([]float64{1})
	if s := e.State(nil); s[0] > -math.Pi+0.5 || s[0] < -math.Pi {
		t.Errorf("θ1 after crossing π = %v, want wrapped to just above −π", s[0])
	}
	// Clipping: velocities beyond the limits are clipped to ±4π, ±9π.
	mustSet(t, e, 0, 0, 40, -60)
	e.Step([]float64{1})
	if s := e.State(nil); s[2] != 4*math.Pi || s[3] != -9*math.Pi {
		t.Errorf("velocities %v %v, want clipped to 4π, −9π", s[2], s[3])
	}
	// Actions 0, 1, 2 apply torques −1, 0, +1: the response in θ̇2 is
	// antisymmetric (zero for no torque up to cos(−π/2) ≠ 0 in float64).
	var d2 [3]float64
	for a := range 3 {
		mustSet(t, e, 0, 0, 0, 0)
		e.Step([]float64{float64(a)})
		d2[a] = e.State(nil)[3]
	}
	if math.Abs(d2[1]) > 1e-15 || math.Abs(d2[0]+d2[2]) > 1e-15 || !(d2[2] > 0.1) {
		t.Errorf("θ̇2 after actions 0,1,2 from rest = %v, want −x, 0, x with x > 0", d2)
	}
}

func assertPanics(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: did not panic", what)
		}
	}()
	f()
}

// TestResetDistributions checks the support and the first two moments of the
// initial-state distributions (Gymnasium: Pendulum U([−π,−1],[π,1]),
// CartPole U(−0.05,0.05)⁴, Acrobot U(−0.1,0.1)⁴ rounded to float32).
func TestResetDistributions(t *testing.T) {
	const n = 20000
	tests := []struct {
		env    string
		lo, hi []float64
	}{
		{"Pendulum-v1", []float64{-math.Pi, -1}, []float64{math.Pi, 1}},
		{"CartPole-v1", []float64{-0.05, -0.05, -0.05, -0.05}, []float64{0.05, 0.05, 0.05, 0.05}},
		{"Acrobot-v1", []float64{-0.1, -0.1, -0.1, -0.1}, []float64{0.1, 0.1, 0.1, 0.1}},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			e := mustMake(t, tc.env, nil)
			d := e.StateDim()
			sum, sum2 := make([]float64, d), make([]float64, d)
			s := make([]float64, d)
			for seed := range uint64(n) {
				e.Reset(seed)
				s = e.State(s)
				for i, v := range s {
					if v < tc.lo[i] || v > tc.hi[i] {
						t.Fatalf("seed %d: %s = %v outside [%v, %v]", seed, e.StateLabels()[i], v, tc.lo[i], tc.hi[i])
					}
					if tc.env == "Acrobot-v1" && v != float64(float32(v)) {
						t.Fatalf("seed %d: %v is not float32-representable", seed, v)
					}
					sum[i] += v
					sum2[i] += v * v
				}
			}
			for i := range d {
				w := tc.hi[i] - tc.lo[i]
				mean, meanWant := sum[i]/n, (tc.hi[i]+tc.lo[i])/2
				variance, varWant := sum2[i]/n-mean*mean, w*w/12
				// 5 standard errors: the mean of U has sd w/√(12n); the variance estimate sd ≈ w²/(√180·√n)·... (bounded by w²/√(80n)).
				approx.Equal(t, e.StateLabels()[i]+" mean", mean, meanWant, 5*w/math.Sqrt(12*n), 0)
				approx.Equal(t, e.StateLabels()[i]+" variance", variance, varWant, 5*w*w/math.Sqrt(80*n), 0)
			}
			// Same seed, same state; different seed, different state.
			a := e.State(nil)
			e.Reset(n - 1)
			approx.Slices(t, "same seed", e.State(nil), a, 0, 0)
			e.Reset(n + 7)
			if approx.MaxAbsDiff(e.State(nil), a) == 0 {
				t.Error("different seeds gave the same initial state")
			}
		})
	}
}

// TestErrors checks the messages for unknown environments and parameters,
// bad values, bad states and bad actions.
func TestErrors(t *testing.T) {
	if _, err := Make("MountainCar-v0"); !errors.Is(err, ErrUnknownEnv) || !strings.Contains(err.Error(), "CartPole-v1") {
		t.Errorf("unknown env: %v", err)
	}
	_, err := MakeWithParams("Pendulum-v1", map[string]float64{"gravity": 9.81})
	if !errors.Is(err, ErrUnknownParam) || !strings.Contains(err.Error(), `"gravity"`) || !strings.Contains(err.Error(), "max_torque") {
		t.Errorf("unknown param: %v", err)
	}
	bad := []struct {
		env    string
		params map[string]float64
	}{
		{"Pendulum-v1", map[string]float64{"m": 0}},
		{"Pendulum-v1", map[string]float64{"g": math.NaN()}},
		{"Pendulum-v1", map[string]float64{"damping": -1}},
		{"CartPole-v1", map[string]float64{"semi_implicit": 0.5}},
		{"CartPole-v1", map[string]float64{"max_episode_steps": 2.5}},
		{"Acrobot-v1", map[string]float64{"obs_noise_std": -0.1}},
		{"Acrobot-v1", map[string]float64{"dt": math.Inf(1)}},
	}
	for _, b := range bad {
		if _, err := MakeWithParams(b.env, b.params); err == nil {
			t.Errorf("%s %v: no error", b.env, b.params)
		}
	}
	if _, err := ClientEnv("CartPole-v1", -1, 0); err == nil {
		t.Error("client -1: no error")
	}
	e := mustMake(t, "CartPole-v1", nil)
	if err := e.SetState([]float64{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "theta_dot") {
		t.Errorf("short state: %v", err)
	}
	if err := e.SetState([]float64{0, math.NaN(), 0, 0}); err == nil || !strings.Contains(err.Error(), "x_dot") {
		t.Errorf("NaN state: %v", err)
	}
	actionTests := []struct {
		space  envs.Space
		action []float64
		ok     bool
	}{
		{envs.Space{N: 2}, []float64{1}, true},
		{envs.Space{N: 2}, []float64{2}, false},
		{envs.Space{N: 2}, []float64{-1}, false},
		{envs.Space{N: 3}, []float64{0.5}, false},
		{envs.Space{N: 3}, []float64{math.NaN()}, false},
		{envs.Space{N: 3}, []float64{0, 1}, false},
		{envs.Space{Low: []float64{-2}, High: []float64{2}}, []float64{7}, true}, // clipped by Step
		{envs.Space{Low: []float64{-2}, High: []float64{2}}, []float64{math.Inf(1)}, false},
		{envs.Space{Low: []float64{-2}, High: []float64{2}}, []float64{}, false},
	}
	for _, at := range actionTests {
		if err := CheckAction(at.space, at.action); (err == nil) != at.ok {
			t.Errorf("CheckAction(%+v, %v) = %v, want ok=%v", at.space, at.action, err, at.ok)
		}
	}
	e.Reset(0)
	assertPanics(t, "CartPole action 2", func() { e.Step([]float64{2}) })
	assertPanics(t, "CartPole action 0.5", func() { e.Step([]float64{0.5}) })
	a := mustMake(t, "Acrobot-v1", nil)
	assertPanics(t, "Step before Reset", func() { a.Step([]float64{0}) })
}

// TestSpaces checks the Gymnasium spaces.
func TestSpaces(t *testing.T) {
	p := mustMake(t, "Pendulum-v1", nil)
	if s := p.ActionSpace(); s.IsDiscrete() || s.Low[0] != -2 || s.High[0] != 2 {
		t.Errorf("Pendulum action space %+v", s)
	}
	if s := p.ObservationSpace(); s.Dim() != 3 || s.High[2] != 8 {
		t.Errorf("Pendulum observation space %+v", s)
	}
	c := mustMake(t, "CartPole-v1", nil)
	if s := c.ActionSpace(); s.N != 2 {
		t.Errorf("CartPole action space %+v", s)
	}
	if s := c.ObservationSpace(); s.Dim() != 4 || s.High[0] != float64(float32(4.8)) || s.High[1] != math.MaxFloat32 {
		t.Errorf("CartPole observation space %+v", s)
	}
	a := mustMake(t, "Acrobot-v1", nil)
	if s := a.ActionSpace(); s.N != 3 {
		t.Errorf("Acrobot action space %+v", s)
	}
	if s := a.ObservationSpace(); s.Dim() != 6 || s.High[4] != float64(float32(4*math.Pi)) || s.High[5] != float64(float32(9*math.Pi)) {
		t.Errorf("Acrobot observation space %+v", s)
	}
	for _, e := range []Stateful{p, c, a} {
		if len(e.StateLabels()) != e.StateDim() {
			t.Errorf("%s: %d labels for state dim %d", e.Name(), len(e.StateLabels()), e.StateDim())
		}
	}
}

// TestClientParams checks the appendix's perturbations for a few clients.
func TestClientParams(t *testing.T) {
	tests := []struct {
		env  string
		i    int
		want map[string]float64
	}{
		{"Pendulum-v1", 0, map[string]float64{"g": 9.81, "torque_scale": 1, "damping": 0.2, "obs_noise_std": 0}},
		{"Pendulum-v1", 3, map[string]float64{"g": 10.41, "torque_scale": 1.3, "damping": 0.2 * 1.15, "obs_noise_std": 0.015}},
		{"CartPole-v1", 2, map[string]float64{"force_mag": 12, "gravity": 9.8 * 1.01, "masscart": 1.1, "masspole": 0.11, "length": 0.55, "obs_noise_std": 0.01}},
		{"Acrobot-v1", 4, map[string]float64{"link_mass_1": 1.2, "link_mass_2": 1.2, "link_length_1": 1.2, "link_length_2": 1.2,
			"link_com_pos_1": 0.6, "link_com_pos_2": 0.6, "link_moi": 1.2 * 1.2 * 1.2, "torque_scale": 1.44, "goal_height": 1, "obs_noise_std": 0.02}},
	}
	for _, tc := range tests {
		p, err := ClientParams(tc.env, tc.i)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.want {
			approx.Equal(t, tc.env+" "+k, p[k], v, 1e-12, 1e-12)
		}
	}
	// Client 0 has no observation noise and matches MakeWithParams with its parameters.
	for _, name := range Names() {
		p, _ := ClientParams(name, 0)
		c, err := ClientEnv(name, 0, 99)
		if err != nil {
			t.Fatal(err)
		}
		m := mustMake(t, name, p)
		approx.Slices(t, name+" client 0 reset", c.Reset(5), m.Reset(5), 0, 0)
	}
}

// TestObservationNoise checks that ClientEnv's noise is added to observations
// only, has the documented standard deviation, and is reproducible.
func TestObservationNoise(t *testing.T) {
	const i, n = 4, 4000
	sd := 0.005 * i
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			e, err := ClientEnv(name, i, 7)
			if err != nil {
				t.Fatal(err)
			}
			p := e.Params()
			delete(p, "obs_noise_std")
			clean := mustMake(t, name, p) // same physics, no noise
			var sum, sum2 float64
			count := 0
			state := make([]float64, e.StateDim())
			act := []float64{0}
			for ep := uint64(0); count < n; ep++ {
				obs := e.Reset(ep)
				for {
					state = e.State(state)
					mustSet(t, clean, state...)
					want := clean.Observe()
					for j := range obs {
						d := obs[j] - want[j]
						sum += d
						sum2 += d * d
						count++
					}
					var term, trunc bool
					obs, _, term, trunc = e.Step(act)
					if term || trunc || count >= n {
						break
					}
				}
			}
			mean := sum / float64(count)
			approx.Equal(t, "noise mean", mean, 0, 5*sd/math.Sqrt(float64(count)), 0)
			approx.Equal(t, "noise sd", math.Sqrt(sum2/float64(count)-mean*mean), sd, 0, 0.06)

			// Same noise seed and episode seed: same noisy observations.
			a, _ := ClientEnv(name, i, 7)
			b, _ := ClientEnv(name, i, 7)
			c, _ := ClientEnv(name, i, 8)
			oa, ob, oc := append([]float64(nil), a.Reset(3)...), append([]float64(nil), b.Reset(3)...), c.Reset(3)
			approx.Slices(t, "same seeds", oa, ob, 0, 0)
			if approx.MaxAbsDiff(oa, oc) == 0 {
				t.Error("different noise seeds gave identical observations")
			}
			// Reset reseeds: the same episode seed repeats the same noise.
			approx.Slices(t, "reset reseeds", a.Reset(3), oa, 0, 0)
		})
	}
}
