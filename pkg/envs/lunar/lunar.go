// Package lunar is Gymnasium's LunarLander-v3 and LunarLanderContinuous-v3
// (gymnasium/envs/box2d/lunar_lander.py, Gymnasium 1.x) on
// third_party/box2d, a fork of github.com/ByteArena/box2d (a pure-Go port of
// Box2D 2.3, the generation that pybox2d wraps) that computes bit for bit
// what the port computes without its per-step allocations and avoidable
// work, with the paper's per-client wind.
//
// The transcription keeps every detail that changes trajectories: a fresh
// world per reset; the terrain of 11 chunks with the helipad flattened and
// the smoothing 0.33·(h[i−1] + h[i] + h[i+1]) including Python's wrap of
// h[−1] to the last height; the initial random force; the legs on revolute
// joints with limits and motors; the contact listener (the lander's body
// touching the ground is game over; leg contacts are tracked); main and side
// engines with their two dispersion draws every step and the side engine's
// impulse point (Gymnasium's "17" where SIDE_ENGINE_HEIGHT is 14); wind
// (tanh(sin(0.02 k) + sin(0.01 π k))·wind_power) and turbulence torque
// applied while no leg touches; the shaping reward and fuel costs; +100
// when the lander falls asleep, −100 on a crash or leaving the screen;
// reset's closing no-op step; the 1000-step TimeLimit.
//
// Deliberate differences, none of which changes the rules:
//   - Box2D here computes in float64, pybox2d in float32. Replaying
//     Gymnasium's 34 reference episodes with its own draws, observations
//     agree to 3·10⁻⁶ over the first 10 steps and to 10⁻⁴ until the ground
//     is touched, and every episode ends the same way at the same step.
//     Observations are rounded to float32 as Gymnasium returns them; rewards
//     are computed in float64 from the unrounded state, as in Gymnasium.
//   - pybox2d's revoluteJointDef(bodyA=…, bodyB=…) sets the joint's
//     reference angle to the bodies' angle difference; ByteArena's
//     definition does not, so it is set here (without it the legs rest 0.05
//     rad off and landings diverge).
//   - Random draws come from a Draws source: by default a PCG generator
//     seeded at each Reset (not numpy's PCG64 stream); a test injects
//     Gymnasium's own recorded draws instead (Replay).
//   - No particles: Gymnasium creates them only when rendering.
//
// Speed (BenchmarkStep, one core, resets included; see the fork's README):
// no allocation per step (one per step on average under random actions,
// from the world that each Reset builds), and under half the CPU time per
// step of the unmodified port: 6.6–6.9 µs under random actions, 7.8–7.9 µs
// under the heuristic controller, against 13.7–14.2 and 17.1–18.0. Nearly all the time is Box2D's solver at
// Gymnasium's 180 velocity and 60 position iterations per step, 70 % of it
// the legs' two revolute joints. TestGoldenTrajectories pins 192 episodes
// bit for bit to what the unmodified port computed.
package lunar

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fedirl/fedirl/third_party/box2d"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Gymnasium's constants.
const (
	fps              = 50
	scale            = 30.0
	mainEnginePower  = 13.0
	sideEnginePower  = 0.6
	initialRandom    = 1000.0
	legAway          = 20
	legDown          = 18
	legW, legH       = 2, 8
	legSpringTorque  = 40
	sideEngineHeight = 14
	sideEngineAway   = 12
	mainEngineY      = 4
	viewportW        = 600
	viewportH        = 400
	chunks           = 11
)

var landerPoly = [][2]float64{{-14, +17}, {-17, 0}, {-17, -10}, {+17, -10}, {+17, 0}, {+14, +17}}

// Draws is the environment's source of random numbers, with numpy
// Generator semantics: Uniform(lo, hi) in [lo, hi), Integers(lo, hi) in
// [lo, hi).
type Draws interface {
	Uniform(lo, hi float64) float64
	Integers(lo, hi int64) int64
}

// pcgDraws is the default Draws: a PCG generator.
type pcgDraws struct{ r *rand.Rand }

func (d pcgDraws) Uniform(lo, hi float64) float64 { return lo + (hi-lo)*d.r.Float64() }
func (d pcgDraws) Integers(lo, hi int64) int64    { return lo + d.r.Int64N(hi-lo) }

// Params are the environment's parameters (Gymnasium's make kwargs).
type Params struct {
	// Continuous selects LunarLanderContinuous-v3 (Box(2) actions) over LunarLander-v3 (Discrete(4)).
	Continuous bool
	// Gravity is in (−12, 0) [−10].
	Gravity float64
	// EnableWind turns wind and turbulence on.
	EnableWind bool
	// WindPower is in [0, 20] [15].
	WindPower float64
	// TurbulencePower is in [0, 2] [1.5].
	TurbulencePower float64
	// MaxEpisodeSteps is the TimeLimit [1000].
	MaxEpisodeSteps int
}

// DefaultParams returns Gymnasium's defaults.
func DefaultParams(continuous bool) Params {
	return Params{Continuous: continuous, Gravity: -10, WindPower: 15, TurbulencePower: 1.5, MaxEpisodeSteps: 1000}
}

// ClientParams returns the paper's client i: wind on, wind power 10 + i,
// turbulence 1 + 0.2·i, gravity unchanged.
func ClientParams(continuous bool, i int) Params {
	p := DefaultParams(continuous)
	p.EnableWind, p.WindPower, p.TurbulencePower = true, 10+float64(i), 1+0.2*float64(i)
	return p
}

// Validate returns an error naming the first parameter outside Gymnasium's range.
func (p Params) Validate() error {
	switch {
	case !(p.Gravity > -12 && p.Gravity < 0):
		return fmt.Errorf("lunar: gravity %v must be in (-12, 0)", p.Gravity)
	case !(p.WindPower >= 0 && p.WindPower <= 20):
		return fmt.Errorf("lunar: wind_power %v must be in [0, 20]", p.WindPower)
	case !(p.TurbulencePower >= 0 && p.TurbulencePower <= 2):
		return fmt.Errorf("lunar: turbulence_power %v must be in [0, 2]", p.TurbulencePower)
	case p.MaxEpisodeSteps < 1:
		return fmt.Errorf("lunar: max_episode_steps %d must be ≥ 1", p.MaxEpisodeSteps)
	}
	return nil
}

// Env is one LunarLander instance; it implements envs.Env.
type Env struct {
	p        Params
	injected Draws
	draws    Draws
	pcg      *rand.PCG // the default source, reseeded at each Reset
	rng      *rand.Rand
	rjd      box2d.B2RevoluteJointDef

	world    *box2d.B2World
	lander   *box2d.B2Body
	legs     [2]*box2d.B2Body
	joints   [2]*box2d.B2RevoluteJoint
	contact  [2]bool
	gameOver bool

	helipadY           float64
	prevShaping        float64
	hasPrev            bool
	windIdx, torqueIdx int64
	steps              int
	done               bool
	obs                []float64
	state              [8]float64
}

// New returns an environment with parameters p.
func New(p Params) (*Env, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Env{p: p, obs: make([]float64, 8)}, nil
}

// Name returns the Gymnasium id.
func (e *Env) Name() string {
	if e.p.Continuous {
		return "LunarLanderContinuous-v3"
	}
	return "LunarLander-v3"
}

// Params returns the parameters in use.
func (e *Env) Params() Params { return e.p }

// MaxEpisodeSteps returns the TimeLimit.
func (e *Env) MaxEpisodeSteps() int { return e.p.MaxEpisodeSteps }

// SetDraws makes every later episode draw from d instead of the seeded
// generator (nil restores the generator); Reset's seed is then ignored.
func (e *Env) SetDraws(d Draws) { e.injected = d }

// ObservationSpace is Gymnasium's Box of 8.
func (e *Env) ObservationSpace() envs.Space {
	return envs.Space{Low: []float64{-2.5, -2.5, -10, -10, -2 * math.Pi, -10, 0, 0},
		High: []float64{2.5, 2.5, 10, 10, 2 * math.Pi, 10, 1, 1}}
}

// ActionSpace is Box(−1, 1, (2,)) for the continuous version, Discrete(4) otherwise.
func (e *Env) ActionSpace() envs.Space {
	if e.p.Continuous {
		return envs.Space{Low: []float64{-1, -1}, High: []float64{1, 1}}
	}
	return envs.Space{N: 4}
}

// contactListener is Gymnasium's ContactDetector.
type contactListener struct{ e *Env }

func (c contactListener) bodies(contact box2d.B2ContactInterface) (a, b *box2d.B2Body) {
	return contact.GetFixtureA().GetBody(), contact.GetFixtureB().GetBody()
}

func (c contactListener) BeginContact(contact box2d.B2ContactInterface) {
	a, b := c.bodies(contact)
	if a == c.e.lander || b == c.e.lander {
		c.e.gameOver = true
	}
	for i, l := range c.e.legs {
		if l == a || l == b {
			c.e.contact[i] = true
		}
	}
}

func (c contactListener) EndContact(contact box2d.B2ContactInterface) {
	a, b := c.bodies(contact)
	for i, l := range c.e.legs {
		if l == a || l == b {
			c.e.contact[i] = false
		}
	}
}

func (c contactListener) PreSolve(box2d.B2ContactInterface, box2d.B2Manifold)         {}
func (c contactListener) PostSolve(box2d.B2ContactInterface, *box2d.B2ContactImpulse) {}

func vec(x, y float64) box2d.B2Vec2 { return box2d.MakeB2Vec2(x, y) }

// Reset starts a new episode: a fresh world, terrain, lander and legs, the
// initial push, the wind phase, and Gymnasium's closing no-op step.
func (e *Env) Reset(seed uint64) []float64 {
	e.draws = e.injected
	if e.draws == nil {
		// Reseeding one PCG gives the stream of a new NewPCG(seed, …),
		// without allocating a generator per episode.
		if e.pcg == nil {
			e.pcg = rand.NewPCG(seed, 0)
			e.rng = rand.New(e.pcg)
		}
		e.pcg.Seed(seed, 0x4c756e61724c616e) // "LunarLan"
		e.draws = pcgDraws{e.rng}
	}
	w := box2d.MakeB2World(vec(0, e.p.Gravity))
	e.world = &w
	e.world.SetContactListener(contactListener{e})
	e.gameOver, e.hasPrev, e.contact, e.steps, e.done = false, false, [2]bool{}, 0, false

	W, H := viewportW/scale, viewportH/scale
	var height [chunks + 1]float64
	for i := range height {
		height[i] = e.draws.Uniform(0, H/2)
	}
	var chunkX [chunks]float64
	for i := range chunkX {
		chunkX[i] = W / (chunks - 1) * float64(i)
	}
	e.helipadY = H / 4
	for i := chunks/2 - 2; i <= chunks/2+2; i++ {
		height[i] = e.helipadY
	}
	var smooth [chunks]float64
	for i := range smooth {
		prev := height[(i-1+len(height))%len(height)] // Python's height[-1] is the last entry
		smooth[i] = 0.33 * (prev + height[i] + height[i+1])
	}

	bd := box2d.MakeB2BodyDef()
	moon := e.world.CreateBody(&bd)
	edge := box2d.NewB2EdgeShape()
	edge.Set(vec(0, 0), vec(W, 0))
	fd := box2d.MakeB2FixtureDef()
	fd.Shape = edge
	fd.Filter = box2d.MakeB2Filter()
	moon.CreateFixtureFromDef(&fd)
	for i := 0; i < chunks-1; i++ {
		s := box2d.NewB2EdgeShape()
		s.Set(vec(chunkX[i], smooth[i]), vec(chunkX[i+1], smooth[i+1]))
		fd := box2d.MakeB2FixtureDef()
		fd.Shape, fd.Density, fd.Friction = s, 0, 0.1
		fd.Filter = box2d.MakeB2Filter()
		moon.CreateFixtureFromDef(&fd)
	}

	initialX, initialY := viewportW/scale/2, float64(viewportH)/scale
	bd = box2d.MakeB2BodyDef()
	bd.Type = box2d.B2BodyType.B2_dynamicBody
	bd.Position = vec(initialX, initialY)
	e.lander = e.world.CreateBody(&bd)
	poly := box2d.NewB2PolygonShape()
	verts := make([]box2d.B2Vec2, len(landerPoly))
	for i, v := range landerPoly {
		verts[i] = vec(v[0]/scale, v[1]/scale)
	}
	poly.Set(verts, len(verts))
	fd = box2d.MakeB2FixtureDef()
	fd.Shape, fd.Density, fd.Friction, fd.Restitution = poly, 5.0, 0.1, 0
	fd.Filter = box2d.MakeB2Filter()
	fd.Filter.CategoryBits, fd.Filter.MaskBits = 0x0010, 0x001
	e.lander.CreateFixtureFromDef(&fd)

	fx := e.draws.Uniform(-initialRandom, initialRandom)
	fy := e.draws.Uniform(-initialRandom, initialRandom)
	e.lander.ApplyForceToCenter(vec(fx, fy), true)
	if e.p.EnableWind {
		e.windIdx = e.draws.Integers(-9999, 9999)
		e.torqueIdx = e.draws.Integers(-9999, 9999)
	}

	for k, i := range []float64{-1, +1} {
		bd := box2d.MakeB2BodyDef()
		bd.Type = box2d.B2BodyType.B2_dynamicBody
		bd.Position = vec(initialX-i*legAway/scale, initialY)
		bd.Angle = i * 0.05
		leg := e.world.CreateBody(&bd)
		box := box2d.NewB2PolygonShape()
		box.SetAsBox(legW/scale, legH/scale)
		fd := box2d.MakeB2FixtureDef()
		fd.Shape, fd.Density, fd.Restitution = box, 1.0, 0
		fd.Filter = box2d.MakeB2Filter()
		fd.Filter.CategoryBits, fd.Filter.MaskBits = 0x0020, 0x001
		leg.CreateFixtureFromDef(&fd)
		// The definition lives in the Env: CreateJoint takes an interface,
		// through which a local would escape to the heap.
		e.rjd = box2d.MakeB2RevoluteJointDef()
		rjd := &e.rjd
		rjd.BodyA, rjd.BodyB = e.lander, leg
		rjd.LocalAnchorA = vec(0, 0)
		rjd.LocalAnchorB = vec(i*legAway/scale, legDown/scale)
		rjd.EnableMotor, rjd.EnableLimit = true, true
		rjd.MaxMotorTorque = legSpringTorque
		rjd.MotorSpeed = 0.3 * i
		// pybox2d's revoluteJointDef(bodyA=…, bodyB=…) sets the reference
		// angle to bodyB.angle − bodyA.angle; the legs start at ±0.05 rad.
		rjd.ReferenceAngle = leg.GetAngle() - e.lander.GetAngle()
		if i == -1 {
			rjd.LowerAngle, rjd.UpperAngle = 0.9-0.5, 0.9
		} else {
			rjd.LowerAngle, rjd.UpperAngle = -0.9, -0.9+0.5
		}
		e.joints[k] = e.world.CreateJoint(rjd).(*box2d.B2RevoluteJoint)
		e.legs[k] = leg
	}
	noop := []float64{0}
	if e.p.Continuous {
		noop = []float64{0, 0}
	}
	obs, _, _, _ := e.step(noop)
	e.steps = 0
	return obs
}

// CheckAction returns an error for an action of the wrong length, not
// finite, or not one of 0…3 for the discrete version.
func (e *Env) CheckAction(action []float64) error {
	if e.p.Continuous {
		if len(action) != 2 {
			return fmt.Errorf("%s: action has %d values, want 2 (main, lateral)", e.Name(), len(action))
		}
		for i, a := range action {
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return fmt.Errorf("%s: action[%d] = %v is not finite", e.Name(), i, a)
			}
		}
		return nil
	}
	if len(action) != 1 || action[0] != math.Trunc(action[0]) || action[0] < 0 || action[0] > 3 {
		return fmt.Errorf("%s: action %v is not one of 0, 1, 2, 3", e.Name(), action)
	}
	return nil
}

// Step applies action for one time step (1/50 s). An invalid action panics;
// check user input with CheckAction.
func (e *Env) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool) {
	if e.world == nil || e.done {
		panic("lunar: Step before Reset or after the episode ended")
	}
	if err := e.CheckAction(action); err != nil {
		panic(err)
	}
	obs, reward, terminated, truncated = e.step(action)
	e.steps++
	if !terminated && e.steps >= e.p.MaxEpisodeSteps {
		truncated = true
	}
	e.done = terminated || truncated
	return obs, reward, terminated, truncated
}

func windFn(k int64) float64 {
	x := float64(k)
	return math.Tanh(math.Sin(0.02*x) + math.Sin(math.Pi*0.01*x))
}

func clip(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func (e *Env) step(action []float64) ([]float64, float64, bool, bool) {
	if e.p.EnableWind && !(e.contact[0] || e.contact[1]) {
		windMag := windFn(e.windIdx) * e.p.WindPower
		e.windIdx++
		e.lander.ApplyForceToCenter(vec(windMag, 0), true)
		torqueMag := windFn(e.torqueIdx) * e.p.TurbulencePower
		e.torqueIdx++
		e.lander.ApplyTorque(torqueMag, true)
	}
	var a0, a1 float64
	disc := -1
	if e.p.Continuous {
		a0, a1 = clip(action[0], -1, 1), clip(action[1], -1, 1)
	} else {
		disc = int(action[0])
	}
	angle := e.lander.GetAngle()
	tip := [2]float64{math.Sin(angle), math.Cos(angle)}
	side := [2]float64{-tip[1], tip[0]}
	disp := [2]float64{e.draws.Uniform(-1, 1) / scale, e.draws.Uniform(-1, 1) / scale}

	mPower := 0.0
	if (e.p.Continuous && a0 > 0) || disc == 2 {
		mPower = 1.0
		if e.p.Continuous {
			mPower = (clip(a0, 0, 1) + 1) * 0.5
		}
		ox := tip[0]*(mainEngineY/scale+2*disp[0]) + side[0]*disp[1]
		oy := -tip[1]*(mainEngineY/scale+2*disp[0]) - side[1]*disp[1]
		pos := e.lander.GetPosition()
		e.lander.ApplyLinearImpulse(vec(-ox*mainEnginePower*mPower, -oy*mainEnginePower*mPower), vec(pos.X+ox, pos.Y+oy), true)
	}
	sPower := 0.0
	if (e.p.Continuous && math.Abs(a1) > 0.5) || disc == 1 || disc == 3 {
		var direction float64
		if e.p.Continuous {
			direction = math.Copysign(1, a1)
			sPower = clip(math.Abs(a1), 0.5, 1)
		} else {
			direction = float64(disc - 2)
			sPower = 1
		}
		ox := tip[0]*disp[0] + side[0]*(3*disp[1]+direction*sideEngineAway/scale)
		oy := -tip[1]*disp[0] - side[1]*(3*disp[1]+direction*sideEngineAway/scale)
		pos := e.lander.GetPosition()
		// Gymnasium's 17 (not SIDE_ENGINE_HEIGHT = 14) in x: an orientation-dependent torque.
		p := vec(pos.X+ox-tip[0]*17/scale, pos.Y+oy+tip[1]*sideEngineHeight/scale)
		e.lander.ApplyLinearImpulse(vec(-ox*sideEnginePower*sPower, -oy*sideEnginePower*sPower), p, true)
	}

	e.world.Step(1.0/fps, 6*30, 2*30)

	pos, vel := e.lander.GetPosition(), e.lander.GetLinearVelocity()
	s := &e.state
	s[0] = (pos.X - viewportW/scale/2) / (viewportW / scale / 2)
	s[1] = (pos.Y - (e.helipadY + legDown/scale)) / (viewportH / scale / 2)
	s[2] = vel.X * (viewportW / scale / 2) / fps
	s[3] = vel.Y * (viewportH / scale / 2) / fps
	s[4] = e.lander.GetAngle()
	s[5] = 20.0 * e.lander.GetAngularVelocity() / fps
	s[6], s[7] = 0, 0
	if e.contact[0] {
		s[6] = 1
	}
	if e.contact[1] {
		s[7] = 1
	}
	shaping := -100*math.Sqrt(s[0]*s[0]+s[1]*s[1]) - 100*math.Sqrt(s[2]*s[2]+s[3]*s[3]) - 100*math.Abs(s[4]) + 10*s[6] + 10*s[7]
	reward := 0.0
	if e.hasPrev {
		reward = shaping - e.prevShaping
	}
	e.prevShaping, e.hasPrev = shaping, true
	reward -= mPower * 0.30
	reward -= sPower * 0.03
	terminated := false
	if e.gameOver || math.Abs(s[0]) >= 1 {
		terminated, reward = true, -100
	}
	if !e.lander.IsAwake() {
		terminated, reward = true, +100
	}
	for i, v := range s {
		e.obs[i] = float64(float32(v))
	}
	return e.obs, reward, terminated, false
}

// Physics is the lander's full physical state, for inspection.
type Physics struct {
	X, Y, VX, VY, Angle, AngularVelocity float64
	LegAngles                            [2]float64
	LegContacts                          [2]bool
	Awake, GameOver                      bool
	WindIdx, TorqueIdx                   int64
	HelipadY                             float64
}

// Physics returns the current physical state (world units, radians).
func (e *Env) Physics() Physics {
	p, v := e.lander.GetPosition(), e.lander.GetLinearVelocity()
	ph := Physics{X: p.X, Y: p.Y, VX: v.X, VY: v.Y, Angle: e.lander.GetAngle(), AngularVelocity: e.lander.GetAngularVelocity(),
		LegContacts: e.contact, Awake: e.lander.IsAwake(), GameOver: e.gameOver, WindIdx: e.windIdx, TorqueIdx: e.torqueIdx, HelipadY: e.helipadY}
	for i, j := range e.joints {
		ph.LegAngles[i] = j.GetJointAngle()
	}
	return ph
}

// Heuristic is Gymnasium's heuristic controller: the action for observation
// s (a Box action for the continuous version, an index otherwise) in dst.
func Heuristic(dst []float64, s []float64, continuous bool) []float64 {
	angleTarg := clip(s[0]*0.5+s[2]*1.0, -0.4, 0.4)
	hoverTarg := 0.55 * math.Abs(s[0])
	angleTodo := (angleTarg-s[4])*0.5 - s[5]*1.0
	hoverTodo := (hoverTarg-s[1])*0.5 - s[3]*0.5
	if s[6] != 0 || s[7] != 0 {
		angleTodo = 0
		hoverTodo = -s[3] * 0.5
	}
	if continuous {
		dst[0], dst[1] = clip(hoverTodo*20-1, -1, 1), clip(-angleTodo*20, -1, 1)
		return dst
	}
	a := 0.0
	switch {
	case hoverTodo > math.Abs(angleTodo) && hoverTodo > 0.05:
		a = 2
	case angleTodo < -0.05:
		a = 3
	case angleTodo > 0.05:
		a = 1
	}
	dst[0] = a
	return dst
}

// Names lists the registered ids.
func Names() []string { return []string{"LunarLander-v3", "LunarLanderContinuous-v3"} }

// Info describes one parameter: its name, Gymnasium's default and meaning.
type Info struct {
	Name, Doc string
	Default   float64
}

// ParamInfo lists the parameters accepted by Make, in a stable order.
func ParamInfo() []Info {
	return []Info{
		{"gravity", "vertical gravity (m/s²), in (−12, 0)", -10},
		{"enable_wind", "1 turns wind and turbulence on, 0 off", 0},
		{"wind_power", "maximum lateral wind force, in [0, 20]", 15},
		{"turbulence_power", "maximum turbulence torque, in [0, 2]", 1.5},
		{"max_episode_steps", "TimeLimit: the episode is truncated after this many steps", 1000},
	}
}

// ClientDoc documents the paper's client perturbation.
const ClientDoc = "client i: enable_wind = 1, wind_power = 10 + i, turbulence_power = 1 + 0.2·i, gravity unchanged (appendix Setups)"

// Make returns the environment name with parameters overriding the
// defaults (client ≥ 0: the paper's client-i parameters are the base).
func Make(name string, client int, params map[string]float64) (*Env, error) {
	var continuous bool
	switch name {
	case "LunarLanderContinuous-v3":
		continuous = true
	case "LunarLander-v3":
	default:
		return nil, fmt.Errorf("lunar: unknown environment %q (known: LunarLander-v3, LunarLanderContinuous-v3)", name)
	}
	p := DefaultParams(continuous)
	if client >= 0 {
		if err := envs.CheckClient(client); err != nil {
			return nil, err
		}
		p = ClientParams(continuous, client)
	}
	for k, v := range params {
		switch k {
		case "gravity":
			p.Gravity = v
		case "enable_wind":
			if v != 0 && v != 1 {
				return nil, fmt.Errorf("lunar: enable_wind = %v, want 0 or 1", v)
			}
			p.EnableWind = v == 1
		case "wind_power":
			p.WindPower = v
		case "turbulence_power":
			p.TurbulencePower = v
		case "max_episode_steps":
			if v != math.Trunc(v) {
				return nil, fmt.Errorf("lunar: max_episode_steps = %v, want an integer", v)
			}
			p.MaxEpisodeSteps = int(v)
		default:
			return nil, fmt.Errorf("lunar: %s has no parameter %q (known: gravity, enable_wind, wind_power, turbulence_power, max_episode_steps)", name, k)
		}
	}
	return New(p)
}
