package classic

import (
	"math"

	"github.com/fedirl/fedirl/pkg/envs"
)

// CartPole parameter names (see List for defaults and units).
const (
	CartPoleGravity        = "gravity"
	CartPoleMassCart       = "masscart"
	CartPoleMassPole       = "masspole"
	CartPoleLength         = "length"
	CartPoleForceMag       = "force_mag"
	CartPoleTau            = "tau"
	CartPoleSemiImplicit   = "semi_implicit"
	CartPoleThetaThreshold = "theta_threshold_radians"
	CartPoleXThreshold     = "x_threshold"
)

// pi is π as a float64 variable, so that expressions such as 9*pi are
// rounded step by step like Python's instead of being folded exactly at
// compile time.
var pi = math.Pi

func init() {
	register(&spec{
		info: Info{
			Name:    "CartPole-v1",
			Summary: "balance a pole on a cart pushed left/right; obs (x, ẋ, θ, θ̇), actions 0 (push left), 1 (push right)",
			Params: append([]ParamInfo{
				{CartPoleGravity, 9.8, "gravitational acceleration (m/s²)"},
				{CartPoleMassCart, 1.0, "cart mass (kg)"},
				{CartPoleMassPole, 0.1, "pole mass (kg)"},
				{CartPoleLength, 0.5, "half the pole's length (m), as Gymnasium's `length`"},
				{CartPoleForceMag, 10.0, "magnitude of the push (N)"},
				{CartPoleTau, 0.02, "time step (s)"},
				{CartPoleSemiImplicit, 0, "1 selects Gymnasium's semi-implicit Euler integrator, 0 (default) its explicit Euler"},
				{CartPoleThetaThreshold, 12 * 2 * pi / 360, "terminate when |θ| exceeds this (rad; 12°)"},
				{CartPoleXThreshold, 2.4, "terminate when |x| exceeds this (m)"},
			}, commonParams(500)...),
			Client: "client i: force_mag ×(1+0.1i), gravity ×(1+0.005i), masscart and masspole ×(1+0.05i), length ×(1+0.05i), obs_noise_std = 0.005i",
		},
		build: newCartPole,
		client: func(i int, p map[string]float64) {
			fi := float64(i)
			p[CartPoleForceMag] *= 1.0 + 0.1*fi
			p[CartPoleGravity] *= 1.0 + 0.005*fi
			p[CartPoleMassCart] *= 1.0 + 0.05*fi
			p[CartPoleMassPole] *= 1.0 + 0.05*fi
			p[CartPoleLength] *= 1.0 + 0.05*fi
			p[paramNoise] = 0.005 * fi
		},
	})
}

// CartPole is Gymnasium's CartPole-v1 (gymnasium/envs/classic_control/cartpole.py).
//
// State and observation (x, ẋ, θ, θ̇); action 0 pushes left with −force_mag,
// 1 pushes right with +force_mag. With temp = (F + m_p l θ̇² sin θ)/(m_c+m_p):
//
//	θ̈ = (g sin θ − cos θ·temp) / (l (4/3 − m_p cos²θ/(m_c+m_p)))
//	ẍ = temp − m_p l θ̈ cos θ/(m_c+m_p)
//
// integrated by explicit Euler with τ = 0.02 s (semi-implicit optional). The
// episode terminates when |x| > 2.4 or |θ| > 12° (reward 1 on every step,
// including the terminating one) and is truncated after 500 steps. Reset draws
// each coordinate from U[−0.05, 0.05).
type CartPole struct {
	episode
	gravity, masscart, masspole, totalMass, length, polemassLength float64
	forceMag, tau, thetaThreshold, xThreshold                      float64
	semiImplicit                                                   bool
	x, xDot, theta, thetaDot                                       float64
}

func newCartPole(p map[string]float64) (Stateful, error) {
	const name = "CartPole-v1"
	if err := checkPositive(name, p, CartPoleMassCart, CartPoleLength, CartPoleTau, CartPoleThetaThreshold, CartPoleXThreshold); err != nil {
		return nil, err
	}
	if err := checkNonNegative(name, p, CartPoleMassPole, CartPoleForceMag); err != nil {
		return nil, err
	}
	si := p[CartPoleSemiImplicit]
	if si != 0 && si != 1 {
		return nil, errorf("%s parameter %s=%v: must be 0 or 1", name, CartPoleSemiImplicit, si)
	}
	e := &CartPole{
		gravity: p[CartPoleGravity], masscart: p[CartPoleMassCart], masspole: p[CartPoleMassPole],
		length: p[CartPoleLength], forceMag: p[CartPoleForceMag], tau: p[CartPoleTau],
		thetaThreshold: p[CartPoleThetaThreshold], xThreshold: p[CartPoleXThreshold],
		semiImplicit: si == 1,
	}
	e.totalMass = e.masspole + e.masscart
	e.polemassLength = e.masspole * e.length
	if err := e.init(name, p, 4); err != nil {
		return nil, err
	}
	return e, nil
}

// ObservationSpace returns Gymnasium's Box(±[2·x_threshold, f32max, 2·theta_threshold, f32max]) (float32-rounded).
func (e *CartPole) ObservationSpace() envs.Space {
	high := []float64{f32(e.xThreshold * 2), math.MaxFloat32, f32(e.thetaThreshold * 2), math.MaxFloat32}
	low := make([]float64, 4)
	for i, h := range high {
		low[i] = -h
	}
	return envs.Space{Low: low, High: high}
}

// ActionSpace returns Discrete(2).
func (e *CartPole) ActionSpace() envs.Space { return envs.Space{N: 2} }

// StateDim returns 4.
func (e *CartPole) StateDim() int { return 4 }

// StateLabels returns ["x", "x_dot", "theta", "theta_dot"].
func (e *CartPole) StateLabels() []string { return []string{"x", "x_dot", "theta", "theta_dot"} }

// State copies (x, ẋ, θ, θ̇) into dst and returns it.
func (e *CartPole) State(dst []float64) []float64 {
	if len(dst) < 4 {
		dst = make([]float64, 4)
	}
	dst = dst[:4]
	dst[0], dst[1], dst[2], dst[3] = e.x, e.xDot, e.theta, e.thetaDot
	return dst
}

// SetState sets (x, ẋ, θ, θ̇) and starts a new episode from it.
func (e *CartPole) SetState(state []float64) error {
	if err := checkState(e.name, state, e.StateLabels()); err != nil {
		return err
	}
	e.x, e.xDot, e.theta, e.thetaDot = state[0], state[1], state[2], state[3]
	e.begin()
	return nil
}

// Reset draws each state coordinate from U[−0.05, 0.05) with a source seeded with seed.
func (e *CartPole) Reset(seed uint64) []float64 {
	e.beginReset(seed)
	e.x = e.uniform(-0.05, 0.05)
	e.xDot = e.uniform(-0.05, 0.05)
	e.theta = e.uniform(-0.05, 0.05)
	e.thetaDot = e.uniform(-0.05, 0.05)
	return e.Observe()
}

// Observe returns the state plus any observation noise.
func (e *CartPole) Observe() []float64 {
	e.obs[0], e.obs[1], e.obs[2], e.obs[3] = e.x, e.xDot, e.theta, e.thetaDot
	e.addNoise()
	return e.obs
}

// Step pushes the cart left (action 0) or right (action 1) for one time step.
// An action other than 0 or 1 panics; validate user input with CheckAction.
func (e *CartPole) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool) {
	e.beforeStep()
	a := discreteAction(e.name, action, 2)
	x, xDot, theta, thetaDot := e.x, e.xDot, e.theta, e.thetaDot
	force := -e.forceMag
	if a == 1 {
		force = e.forceMag
	}
	costheta := math.Cos(theta)
	sintheta := math.Sin(theta)

	// For the interested reader:
	// https://coneural.org/florian/papers/05_cart_pole.pdf
	temp := (force + e.polemassLength*(thetaDot*thetaDot)*sintheta) / e.totalMass
	thetaacc := (e.gravity*sintheta - costheta*temp) /
		(e.length * (4.0/3.0 - e.masspole*(costheta*costheta)/e.totalMass))
	xacc := temp - e.polemassLength*thetaacc*costheta/e.totalMass

	if !e.semiImplicit {
		x = x + e.tau*xDot
		xDot = xDot + e.tau*xacc
		theta = theta + e.tau*thetaDot
		thetaDot = thetaDot + e.tau*thetaacc
	} else { // semi-implicit euler
		xDot = xDot + e.tau*xacc
		x = x + e.tau*xDot
		thetaDot = thetaDot + e.tau*thetaacc
		theta = theta + e.tau*thetaDot
	}
	e.x, e.xDot, e.theta, e.thetaDot = x, xDot, theta, thetaDot

	terminated = x < -e.xThreshold || x > e.xThreshold ||
		theta < -e.thetaThreshold || theta > e.thetaThreshold
	truncated = e.afterStep(terminated)
	return e.Observe(), 1.0, terminated, truncated
}
