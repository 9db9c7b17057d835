package classic

import (
	"math"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Acrobot parameter names (see List for defaults and units).
const (
	AcrobotLinkLength1 = "link_length_1"
	AcrobotLinkLength2 = "link_length_2"
	AcrobotLinkMass1   = "link_mass_1"
	AcrobotLinkMass2   = "link_mass_2"
	AcrobotLinkCOMPos1 = "link_com_pos_1"
	AcrobotLinkCOMPos2 = "link_com_pos_2"
	AcrobotLinkMOI     = "link_moi"
	AcrobotG           = "g"
	AcrobotDt          = "dt"
	AcrobotMaxVel1     = "max_vel_1"
	AcrobotMaxVel2     = "max_vel_2"
	AcrobotTorqueScale = "torque_scale"
	AcrobotGoalHeight  = "goal_height"
)

func init() {
	register(&spec{
		info: Info{
			Name:    "Acrobot-v1",
			Summary: "swing the tip of a two-link chain above the goal line −cos θ1 − cos(θ1+θ2) > 1; obs (cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2), actions 0,1,2 = torque −1,0,+1",
			Params: append([]ParamInfo{
				{AcrobotLinkLength1, 1.0, "length of link 1 (m); enters the dynamics but not the goal test (as in Gymnasium)"},
				{AcrobotLinkLength2, 1.0, "length of link 2 (m); as in Gymnasium it enters neither the dynamics nor the goal test (only rendering)"},
				{AcrobotLinkMass1, 1.0, "mass of link 1 (kg)"},
				{AcrobotLinkMass2, 1.0, "mass of link 2 (kg)"},
				{AcrobotLinkCOMPos1, 0.5, "position of the centre of mass of link 1 (m)"},
				{AcrobotLinkCOMPos2, 0.5, "position of the centre of mass of link 2 (m)"},
				{AcrobotLinkMOI, 1.0, "moment of inertia of each link (kg·m²)"},
				{AcrobotG, 9.8, "gravitational acceleration (m/s²)"},
				{AcrobotDt, 0.2, "time step (s), integrated by one RK4 step"},
				{AcrobotMaxVel1, 4 * pi, "θ̇1 is clipped to ±max_vel_1 (rad/s)"},
				{AcrobotMaxVel2, 9 * pi, "θ̇2 is clipped to ±max_vel_2 (rad/s)"},
				{AcrobotTorqueScale, 1.0, "extension: the available torques are torque_scale × (−1, 0, +1) (N·m)"},
				{AcrobotGoalHeight, 1.0, "extension: terminate when −cos θ1 − cos(θ1+θ2) exceeds this (Gymnasium: 1; in unit link lengths, whatever the link_length parameters)"},
			}, commonParams(500)...),
			Client: "client i with s = 1+0.05i: link masses ×s, link lengths and centre-of-mass positions ×s, " +
				"moment of inertia ×s³ (mass × length²), torques ×s² (mass × length: keeps the ratio of actuation to gravity torque), " +
				"obs_noise_std = 0.005i; the goal test stays Gymnasium's −cos θ1 − cos(θ1+θ2) > 1 (lengths set as Gymnasium's attributes do not enter it)",
		},
		build: newAcrobot,
		client: func(i int, p map[string]float64) {
			s := 1.0 + 0.05*float64(i)
			p[AcrobotLinkMass1] *= s
			p[AcrobotLinkMass2] *= s
			p[AcrobotLinkLength1] *= s
			p[AcrobotLinkLength2] *= s
			p[AcrobotLinkCOMPos1] *= s
			p[AcrobotLinkCOMPos2] *= s
			p[AcrobotLinkMOI] *= s * s * s
			p[AcrobotTorqueScale] *= s * s
			p[paramNoise] = 0.005 * float64(i)
		},
	})
}

// Acrobot is Gymnasium's Acrobot-v1 (gymnasium/envs/classic_control/acrobot.py)
// with the "book" dynamics, in float64.
//
// State (θ1, θ2, θ̇1, θ̇2), θ1 = 0 hanging down, θ2 relative to link 1;
// observation (cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2); actions 0, 1, 2 apply
// the torques −1, 0, +1 (times torque_scale) at the joint between the links.
// One step is one RK4 step of length dt = 0.2 s, after which the angles are
// wrapped into [−π, π] and the velocities clipped to ±4π and ±9π. The episode
// terminates with reward 0 when −cos θ1 − cos(θ1+θ2) > goal_height (1 by
// default: Gymnasium's test); every other step gives −1. As in Gymnasium, the
// goal test ignores the link lengths: it asks whether the tip of a chain of
// two unit links would be above the line, so a client made by changing
// Gymnasium's LINK_LENGTH_1/LINK_LENGTH_2 attributes keeps the same test. It is truncated after 500 steps. Reset draws each coordinate from
// U[−0.1, 0.1) and rounds it to float32, as Gymnasium does.
type Acrobot struct {
	episode
	m1, m2, l1, l2, lc1, lc2, moi, g, dt float64
	maxVel1, maxVel2, torqueScale, goal  float64
	s                                    [4]float64
	k                                    acrobotConsts
}

// acrobotConsts holds the parameter-only subexpressions of dsdt, each
// associated exactly as Gymnasium's left-to-right Python evaluation does, so
// that hoisting them changes no bit of the result.
type acrobotConsts struct {
	m1lc1sq    float64 // m1 * lc1**2
	l1sqlc2sq  float64 // l1**2 + lc2**2
	twol1lc2   float64 // 2 * l1 * lc2
	lc2sq      float64 // lc2**2
	l1lc2      float64 // l1 * lc2
	m2lc2g     float64 // m2 * lc2 * g
	negm2l1lc2 float64 // -m2 * l1 * lc2
	twom2l1lc2 float64 // 2 * m2 * l1 * lc2
	grav1      float64 // (m1 * lc1 + m2 * l1) * g
	m2l1lc2    float64 // m2 * l1 * lc2
	den0       float64 // m2 * lc2**2 + I2
}

func newAcrobot(p map[string]float64) (Stateful, error) {
	const name = "Acrobot-v1"
	if err := checkPositive(name, p, AcrobotLinkLength1, AcrobotLinkLength2, AcrobotLinkMass2,
		AcrobotLinkCOMPos2, AcrobotDt, AcrobotMaxVel1, AcrobotMaxVel2); err != nil {
		return nil, err
	}
	if err := checkNonNegative(name, p, AcrobotLinkMass1, AcrobotLinkCOMPos1, AcrobotLinkMOI); err != nil {
		return nil, err
	}
	e := &Acrobot{
		m1: p[AcrobotLinkMass1], m2: p[AcrobotLinkMass2], l1: p[AcrobotLinkLength1], l2: p[AcrobotLinkLength2],
		lc1: p[AcrobotLinkCOMPos1], lc2: p[AcrobotLinkCOMPos2], moi: p[AcrobotLinkMOI], g: p[AcrobotG],
		dt: p[AcrobotDt], maxVel1: p[AcrobotMaxVel1], maxVel2: p[AcrobotMaxVel2],
		torqueScale: p[AcrobotTorqueScale], goal: p[AcrobotGoalHeight],
	}
	if err := e.init(name, p, 6); err != nil {
		return nil, err
	}
	m1, m2, l1, lc1, lc2, g, I2 := e.m1, e.m2, e.l1, e.lc1, e.lc2, e.g, e.moi
	e.k = acrobotConsts{
		m1lc1sq:    m1 * (lc1 * lc1),
		l1sqlc2sq:  l1*l1 + lc2*lc2,
		twol1lc2:   2 * l1 * lc2,
		lc2sq:      lc2 * lc2,
		l1lc2:      l1 * lc2,
		m2lc2g:     m2 * lc2 * g,
		negm2l1lc2: -m2 * l1 * lc2,
		twom2l1lc2: 2 * m2 * l1 * lc2,
		grav1:      (m1*lc1 + m2*l1) * g,
		m2l1lc2:    m2 * l1 * lc2,
		den0:       m2*(lc2*lc2) + I2,
	}
	return e, nil
}

// ObservationSpace returns Box(±[1, 1, 1, 1, max_vel_1, max_vel_2]) (float32-rounded like Gymnasium's).
func (e *Acrobot) ObservationSpace() envs.Space {
	high := []float64{1, 1, 1, 1, f32(e.maxVel1), f32(e.maxVel2)}
	low := make([]float64, 6)
	for i, h := range high {
		low[i] = -h
	}
	return envs.Space{Low: low, High: high}
}

// ActionSpace returns Discrete(3).
func (e *Acrobot) ActionSpace() envs.Space { return envs.Space{N: 3} }

// StateDim returns 4.
func (e *Acrobot) StateDim() int { return 4 }

// StateLabels returns ["theta1", "theta2", "theta1_dot", "theta2_dot"]
// (Gymnasium's CartPole naming, used for every environment).
func (e *Acrobot) StateLabels() []string {
	return []string{"theta1", "theta2", "theta1_dot", "theta2_dot"}
}

// State copies (θ1, θ2, θ̇1, θ̇2) into dst and returns it.
func (e *Acrobot) State(dst []float64) []float64 {
	if len(dst) < 4 {
		dst = make([]float64, 4)
	}
	dst = dst[:4]
	copy(dst, e.s[:])
	return dst
}

// SetState sets (θ1, θ2, θ̇1, θ̇2) and starts a new episode from it. The
// values are used as given (not wrapped or clipped), as Gymnasium's
// env.unwrapped.state assignment would.
func (e *Acrobot) SetState(state []float64) error {
	if err := checkState(e.name, state, e.StateLabels()); err != nil {
		return err
	}
	copy(e.s[:], state)
	e.begin()
	return nil
}

// Reset draws each state coordinate from U[−0.1, 0.1), rounded to float32, with a source seeded with seed.
func (e *Acrobot) Reset(seed uint64) []float64 {
	e.beginReset(seed)
	for i := range e.s {
		e.s[i] = f32(e.uniform(-0.1, 0.1))
	}
	return e.Observe()
}

// Observe returns (cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2) plus any observation noise.
func (e *Acrobot) Observe() []float64 {
	s := &e.s
	e.obs[0] = math.Cos(s[0])
	e.obs[1] = math.Sin(s[0])
	e.obs[2] = math.Cos(s[1])
	e.obs[3] = math.Sin(s[1])
	e.obs[4] = s[2]
	e.obs[5] = s[3]
	e.addNoise()
	return e.obs
}

// Step applies the torque of action 0, 1 or 2 for one time step. Any other
// action panics; validate user input with CheckAction.
func (e *Acrobot) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool) {
	e.beforeStep()
	a := discreteAction(e.name, action, 3)
	torque := float64(a - 1) // AVAIL_TORQUE = [-1.0, 0.0, +1]
	if e.torqueScale != 1 {
		torque = e.torqueScale * torque
	}

	// Now, augment the state with our force action so it can be passed to _dsdt.
	sAug := [5]float64{e.s[0], e.s[1], e.s[2], e.s[3], torque}
	ns := e.rk4(sAug)

	ns[0] = wrap(ns[0], -pi, pi)
	ns[1] = wrap(ns[1], -pi, pi)
	ns[2] = bound(ns[2], -e.maxVel1, e.maxVel1)
	ns[3] = bound(ns[3], -e.maxVel2, e.maxVel2)
	e.s = ns
	terminated = e.terminal()
	reward = -1.0
	if terminated {
		reward = 0.0
	}
	truncated = e.afterStep(terminated)
	return e.Observe(), reward, terminated, truncated
}

// terminal is Gymnasium's _terminal, -cos(s[0]) - cos(s[1] + s[0]) > 1.0,
// with goal_height in place of 1.0; the link lengths do not enter it.
func (e *Acrobot) terminal() bool {
	s := &e.s
	return -math.Cos(s[0])-math.Cos(s[1]+s[0]) > e.goal
}

// dsdt is Gymnasium's AcrobotEnv._dsdt ("book" dynamics), in the same
// operation order; the parameter-only products come from e.k. Upstream:
//
//	d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(theta2)) + I1 + I2
//	d2 = m2 * (lc2**2 + l1 * lc2 * cos(theta2)) + I2
//	phi2 = m2 * lc2 * g * cos(theta1 + theta2 - pi / 2.0)
//	phi1 = (-m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
//	        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
//	        + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2) + phi2)
//	ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * sin(theta2) - phi2)
//	           / (m2 * lc2**2 + I2 - d2**2 / d1)
//	ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
func (e *Acrobot) dsdt(sAug *[5]float64) [5]float64 {
	k := &e.k
	m2 := e.m2
	I1, I2 := e.moi, e.moi
	a := sAug[4]
	theta1, theta2, dtheta1, dtheta2 := sAug[0], sAug[1], sAug[2], sAug[3]
	cos2 := math.Cos(theta2)
	sin2 := math.Sin(theta2)
	d1 := k.m1lc1sq + m2*(k.l1sqlc2sq+k.twol1lc2*cos2) + I1 + I2
	d2 := m2*(k.lc2sq+k.l1lc2*cos2) + I2
	phi2 := k.m2lc2g * math.Cos(theta1+theta2-pi/2.0)
	phi1 := k.negm2l1lc2*(dtheta2*dtheta2)*sin2 -
		k.twom2l1lc2*dtheta2*dtheta1*sin2 +
		k.grav1*math.Cos(theta1-pi/2) +
		phi2
	// the following line is consistent with the java implementation and the book
	ddtheta2 := (a + d2/d1*phi1 - k.m2l1lc2*(dtheta1*dtheta1)*sin2 - phi2) /
		(k.den0 - d2*d2/d1)
	ddtheta1 := -(d2*ddtheta2 + phi1) / d1
	return [5]float64{dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0}
}

// rk4 is Gymnasium's acrobot rk4(derivs, y0, [0, dt]): one classical
// Runge-Kutta step, returning the first four components.
func (e *Acrobot) rk4(y0 [5]float64) [4]float64 {
	dt := e.dt - 0 // t[i+1] - t[i] with t = [0, dt]
	dt2 := dt / 2.0
	var y [5]float64
	k1 := e.dsdt(&y0)
	for j := range y {
		y[j] = y0[j] + dt2*k1[j]
	}
	k2 := e.dsdt(&y)
	for j := range y {
		y[j] = y0[j] + dt2*k2[j]
	}
	k3 := e.dsdt(&y)
	for j := range y {
		y[j] = y0[j] + dt*k3[j]
	}
	k4 := e.dsdt(&y)
	var out [4]float64
	for j := range out {
		out[j] = y0[j] + dt/6.0*(k1[j]+2*k2[j]+2*k3[j]+k4[j])
	}
	return out
}

// wrap is Gymnasium's acrobot wrap: it shifts x by multiples of M−m into [m, M].
func wrap(x, m, M float64) float64 {
	diff := M - m
	for x > M {
		x = x - diff
	}
	for x < m {
		x = x + diff
	}
	return x
}

// bound is Gymnasium's acrobot bound: min(max(x, m), M).
func bound(x, m, M float64) float64 {
	return pyMin(pyMax(x, m), M)
}

// pyMax is Python's built-in max(a, b): a unless b > a.
func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// pyMin is Python's built-in min(a, b): a unless b < a.
func pyMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}
