package classic

import (
	"math"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Pendulum parameter names (see List for defaults and units).
const (
	PendulumG           = "g"
	PendulumM           = "m"
	PendulumL           = "l"
	PendulumDt          = "dt"
	PendulumMaxSpeed    = "max_speed"
	PendulumMaxTorque   = "max_torque"
	PendulumTorqueScale = "torque_scale"
	PendulumDamping     = "damping"
)

// PendulumClientDampingBase is the viscous damping coefficient (N·m·s/rad)
// that the paper's "damping scale 1.0 + 0.05·i" multiplies for client i.
// Gymnasium's pendulum has no damping, so the paper's scale needs a base; we
// chose a light one (about 3% of the velocity lost per 0.05 s step at m = l = 1).
const PendulumClientDampingBase = 0.2

func init() {
	register(&spec{
		info: Info{
			Name:    "Pendulum-v1",
			Summary: "swing up and balance a torque-limited pendulum; obs (cos θ, sin θ, θ̇), action torque in [-2, 2]",
			Params: append([]ParamInfo{
				{PendulumG, 10.0, "gravitational acceleration (m/s²); Gymnasium's default is 10.0"},
				{PendulumM, 1.0, "pendulum mass (kg)"},
				{PendulumL, 1.0, "pendulum length (m)"},
				{PendulumDt, 0.05, "time step (s)"},
				{PendulumMaxSpeed, 8, "angular speed limit (rad/s); θ̇ is clipped to ±max_speed"},
				{PendulumMaxTorque, 2.0, "action bound: the action is clipped to ±max_torque"},
				{PendulumTorqueScale, 1.0, "extension: applied torque = torque_scale × clipped action (the cost uses the applied torque)"},
				{PendulumDamping, 0.0, "extension: viscous damping coefficient b (N·m·s/rad); adds the torque −b·θ̇"},
			}, commonParams(200)...),
			Client: "client i: torque_scale = 1.0+0.1i, damping = PendulumClientDampingBase(0.2)×(1.0+0.05i), g = 9.81+0.2i " +
				"(so client 0 differs from Gymnasium's g=10.0), obs_noise_std = 0.005i",
		},
		build: newPendulum,
		client: func(i int, p map[string]float64) {
			fi := float64(i)
			p[PendulumTorqueScale] = 1.0 + 0.1*fi
			p[PendulumDamping] = PendulumClientDampingBase * (1.0 + 0.05*fi)
			p[PendulumG] = 9.81 + 0.2*fi
			p[paramNoise] = 0.005 * fi
		},
	})
}

// Pendulum is Gymnasium's Pendulum-v1 (gymnasium/envs/classic_control/pendulum.py)
// with an optional viscous damping torque and torque scale.
//
// State (θ, θ̇), θ = 0 upright; observation (cos θ, sin θ, θ̇); action one torque
// in [-max_torque, max_torque], clipped. One step, semi-implicit Euler:
//
//	u   = torque_scale · clip(a, −max_torque, max_torque)
//	r   = −(angle_normalize(θ)² + 0.1·θ̇² + 0.001·u²)
//	θ̇' = clip(θ̇ + (3g/(2l)·sin θ + 3/(m l²)·(u − b·θ̇))·dt, −max_speed, max_speed)
//	θ'  = θ + θ̇'·dt
//
// With b = 0 and torque_scale = 1 this is Gymnasium's step bit for bit. The
// episode never terminates and is truncated after 200 steps. Reset draws
// θ ~ U[−π, π), θ̇ ~ U[−1, 1).
type Pendulum struct {
	episode
	g, m, l, dt, maxSpeed, maxTorque, torqueScale, damping float64
	th, thdot                                              float64
}

func newPendulum(p map[string]float64) (Stateful, error) {
	const name = "Pendulum-v1"
	if err := checkPositive(name, p, PendulumM, PendulumL, PendulumDt, PendulumMaxSpeed, PendulumMaxTorque); err != nil {
		return nil, err
	}
	if err := checkNonNegative(name, p, PendulumDamping); err != nil {
		return nil, err
	}
	e := &Pendulum{
		g: p[PendulumG], m: p[PendulumM], l: p[PendulumL], dt: p[PendulumDt],
		maxSpeed: p[PendulumMaxSpeed], maxTorque: p[PendulumMaxTorque],
		torqueScale: p[PendulumTorqueScale], damping: p[PendulumDamping],
	}
	if err := e.init(name, p, 3); err != nil {
		return nil, err
	}
	return e, nil
}

// ObservationSpace returns Box([-1, -1, -max_speed], [1, 1, max_speed]) (bounds rounded to float32 like Gymnasium's).
func (e *Pendulum) ObservationSpace() envs.Space {
	ms := f32(e.maxSpeed)
	return envs.Space{Low: []float64{-1, -1, -ms}, High: []float64{1, 1, ms}}
}

// ActionSpace returns Box([-max_torque], [max_torque]) (bounds rounded to float32 like Gymnasium's).
func (e *Pendulum) ActionSpace() envs.Space {
	mt := f32(e.maxTorque)
	return envs.Space{Low: []float64{-mt}, High: []float64{mt}}
}

// StateDim returns 2.
func (e *Pendulum) StateDim() int { return 2 }

// StateLabels returns ["theta", "theta_dot"] (Gymnasium's CartPole naming, used for every environment).
func (e *Pendulum) StateLabels() []string { return []string{"theta", "theta_dot"} }

// State copies (θ, θ̇) into dst and returns it.
func (e *Pendulum) State(dst []float64) []float64 {
	if len(dst) < 2 {
		dst = make([]float64, 2)
	}
	dst = dst[:2]
	dst[0], dst[1] = e.th, e.thdot
	return dst
}

// SetState sets (θ, θ̇) and starts a new episode from it.
func (e *Pendulum) SetState(state []float64) error {
	if err := checkState(e.name, state, e.StateLabels()); err != nil {
		return err
	}
	e.th, e.thdot = state[0], state[1]
	e.begin()
	return nil
}

// Reset draws θ ~ U[−π, π), θ̇ ~ U[−1, 1) from a source seeded with seed.
func (e *Pendulum) Reset(seed uint64) []float64 {
	e.beginReset(seed)
	e.th = e.uniform(-math.Pi, math.Pi)
	e.thdot = e.uniform(-1, 1)
	return e.Observe()
}

// Observe returns (cos θ, sin θ, θ̇) plus any observation noise.
func (e *Pendulum) Observe() []float64 {
	e.obs[0] = math.Cos(e.th)
	e.obs[1] = math.Sin(e.th)
	e.obs[2] = e.thdot
	e.addNoise()
	return e.obs
}

// Step applies the torque action[0] (clipped to ±max_torque) for one time step.
func (e *Pendulum) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool) {
	e.beforeStep()
	if len(action) != 1 {
		panic("classic: Pendulum-v1: action must have exactly one value")
	}
	th, thdot := e.th, e.thdot
	g, m, l, dt := e.g, e.m, e.l, e.dt

	u := clip(action[0], -e.maxTorque, e.maxTorque)
	if e.torqueScale != 1 {
		u = e.torqueScale * u
	}
	an := angleNormalize(th)
	costs := an*an + 0.1*(thdot*thdot) + 0.001*(u*u)

	newthdot := thdot + (3*g/(2*l)*math.Sin(th)+3.0/(m*(l*l))*(u-e.damping*thdot))*dt
	newthdot = clip(newthdot, -e.maxSpeed, e.maxSpeed)
	newth := th + newthdot*dt

	e.th, e.thdot = newth, newthdot
	truncated = e.afterStep(false)
	return e.Observe(), -costs, false, truncated
}

// angleNormalize maps x to [−π, π) as Gymnasium's angle_normalize:
// ((x + π) mod 2π) − π with Python's floored modulo.
func angleNormalize(x float64) float64 {
	return pyMod(x+math.Pi, 2*math.Pi) - math.Pi
}
