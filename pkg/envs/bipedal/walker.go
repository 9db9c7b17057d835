// Package bipedal is Gymnasium's BipedalWalker-v3 and its hardcore variant
// (gymnasium/envs/box2d/bipedal_walker.py, Gymnasium 1.x) on
// third_party/box2d32, the project's fork of ByteArena's pure-Go Box2D 2.3
// computing in float32 as pybox2d does, with per-client physics (motor
// torque, leg length, ground friction, hull density, gravity, terrain
// roughness) for a fleet of walkers.
//
// The transcription keeps every detail that changes trajectories: the
// terrain of 200 points (grass with its velocity random walk; in hardcore,
// stumps, stairs and pits chosen from the generator), the ten clouds that
// Gymnasium draws only to render them but whose 110 draws come before the
// initial push, the push itself, the hull, two thighs and two shins on four
// revolute joints with limits and motors (speed ±4 or ±6 rad/s by the sign
// of the action, torque 80·|a|), the contact listener (the hull touching
// the ground is a fall; shin contacts are reported), ten lidar ray casts
// that see only terrain fixtures, the reward (130·x/30 progress shaping,
// −5·|hull angle|, 0.028·|a| per motor, −100 on a fall or leaving on the
// left), termination at the far end, reset's closing no-op step, and the
// TimeLimit (1600 steps; 2000 for BipedalWalkerHardcore-v3). Values handed
// to Box2D are rounded to float32 where pybox2d rounds them; the
// observation and reward arithmetic is float64, as Python's.
//
// Random draws come, by default, from nprand: numpy's default_rng(seed)
// reproduced bit for bit, so Reset(seed) builds the terrain, clouds and push
// that Gymnasium's reset(seed=seed) builds. Replaying Gymnasium's 16
// reference episodes, all 16 agree bit for bit (observations and rewards)
// over every step (TestReplayGymnasium).
//
// Deliberate differences and fixes, none of which changes the rules:
//   - ByteArena's default contact filter is nil, so its worlds collide every
//     fixture pair whatever the category bits (the legs hit each other);
//     the world here gets Box2D's default filter.
//   - pybox2d's revoluteJointDef(bodyA=…, bodyB=…) sets the joint's
//     reference angle to the bodies' angle difference; ByteArena's
//     definition does not, so it is set here.
//   - Box2D 2.3's SetMotorSpeed and SetMaxMotorTorque wake the bodies
//     unconditionally (their sleep timers restart only if asleep);
//     ByteArena's only on a change. The step writes the joint fields and
//     wakes sleeping bodies as 2.3 does.
//   - Each Reset builds a fresh world; Gymnasium reuses one world and
//     destroys the bodies, which can order the broad phase's pairs
//     differently from the second episode of an instance on.
//   - No rendering state (scroll, lidar flicker); Terrain, Clouds and
//     Bodies give what a renderer draws.
package bipedal

import (
	"fmt"
	"math"

	box2d "github.com/fedirl/fedirl/third_party/box2d32"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/nprand"
)

// Gymnasium's constants (pixel units where Gymnasium uses them).
const (
	fps             = 50
	scale           = 30.0
	motorsTorque    = 80
	speedHip        = 4
	speedKnee       = 6
	initialRandom   = 5
	legDownPx       = -8
	legWPx          = 8
	legHPx          = 34
	viewportW       = 600
	viewportH       = 400
	terrainLength   = 200 // in steps
	terrainGrass    = 10  // low long are grass spots, in steps
	terrainStartpad = 20  // in steps
	friction        = 2.5
	nLidar          = 10
	nClouds         = terrainLength / 20
	obsDim          = 14 + nLidar
)

// Derived lengths, computed as Python computes them (float64 divisions).
var (
	terrainStep   = 14 / scale
	terrainHeight = viewportH / scale / 4
	lidarRange    = 160 / scale
	torqueCost    = 0.00035 // × MOTORS_TORQUE at run time, as Python rounds 0.00035 first
)

// contactFilter is Box2D's default filter (category and mask bits); it has no state.
var contactFilter box2d.B2ContactFilter

var hullPoly = [5][2]float64{{-30, +9}, {+6, +9}, {+34, +1}, {+34, -8}, {-30, -8}}

// Draws is the environment's source of random numbers, with numpy
// Generator semantics; *nprand.Generator implements it.
type Draws interface {
	Uniform(lo, hi float64) float64
	Integers(lo, hi int64) int64
	Random() float64
}

// f32 converts a value handed to Box2D as pybox2d does (Box2D's float32).
func f32(x float64) float32 { return float32(x) }

func vec(x, y float64) box2d.B2Vec2 { return box2d.MakeB2Vec2(f32(x), f32(y)) }

// Env is one BipedalWalker instance; it implements envs.Env.
type Env struct {
	p        Params
	name     string
	injected Draws
	draws    Draws
	gen      *nprand.Generator
	rjd      box2d.B2RevoluteJointDef

	world  *box2d.B2World
	hull   *box2d.B2Body
	legs   [4]*box2d.B2Body // thigh 0, shin 0, thigh 1, shin 1 (Gymnasium's legs)
	joints [4]*box2d.B2RevoluteJoint
	ground [4]bool // ground_contact of legs[1] and legs[3]
	fall   bool    // game_over
	push   float64 // the initial horizontal force on the hull

	terrain     Terrain
	clouds      [nClouds]Cloud
	lidar       [nLidar]lidarRay
	lidarCB     box2d.B2RaycastCallback
	rayI        int
	prevShaping float64
	hasPrev     bool
	steps       int
	done        bool
	obs         [obsDim]float64
	state       [obsDim]float64
	torqueCostK float64
}

type lidarRay struct {
	p1, p2   box2d.B2Vec2
	fraction float64
}

// New returns an environment with parameters p, named BipedalWalker-v3.
func New(p Params) (*Env, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	e := &Env{p: p, name: "BipedalWalker-v3", gen: nprand.New(0), torqueCostK: torqueCost * motorsTorque}
	e.lidarCB = e.reportFixture
	return e, nil
}

// Name returns the Gymnasium id.
func (e *Env) Name() string { return e.name }

// Params returns the parameters in use.
func (e *Env) Params() Params { return e.p }

// MaxEpisodeSteps returns the TimeLimit.
func (e *Env) MaxEpisodeSteps() int { return e.p.MaxEpisodeSteps }

// SetDraws makes every later episode draw from d instead of the seeded
// numpy generator (nil restores it); Reset's seed is then ignored.
func (e *Env) SetDraws(d Draws) { e.injected = d }

// ObservationSpace is Gymnasium's Box of 24.
func (e *Env) ObservationSpace() envs.Space {
	pi := math.Pi
	lo := []float64{-pi, -5, -5, -5, -pi, -5, -pi, -5, -0, -pi, -5, -pi, -5, -0}
	hi := []float64{pi, 5, 5, 5, pi, 5, pi, 5, 5, pi, 5, pi, 5, 5}
	for range nLidar {
		lo, hi = append(lo, -1), append(hi, 1)
	}
	return envs.Space{Low: lo, High: hi}
}

// ActionSpace is Box(−1, 1, (4,)): hip 0, knee 0, hip 1, knee 1.
func (e *Env) ActionSpace() envs.Space {
	return envs.Space{Low: []float64{-1, -1, -1, -1}, High: []float64{1, 1, 1, 1}}
}

// contactListener is Gymnasium's ContactDetector.
type contactListener struct{ e *Env }

func (c contactListener) BeginContact(contact box2d.B2ContactInterface) {
	a, b := contact.GetFixtureA().GetBody(), contact.GetFixtureB().GetBody()
	if a == c.e.hull || b == c.e.hull {
		c.e.fall = true
	}
	for _, i := range [2]int{1, 3} {
		if l := c.e.legs[i]; l == a || l == b {
			c.e.ground[i] = true
		}
	}
}

func (c contactListener) EndContact(contact box2d.B2ContactInterface) {
	a, b := contact.GetFixtureA().GetBody(), contact.GetFixtureB().GetBody()
	for _, i := range [2]int{1, 3} {
		if l := c.e.legs[i]; l == a || l == b {
			c.e.ground[i] = false
		}
	}
}

func (c contactListener) PreSolve(box2d.B2ContactInterface, box2d.B2Manifold)         {}
func (c contactListener) PostSolve(box2d.B2ContactInterface, *box2d.B2ContactImpulse) {}

// reportFixture is Gymnasium's LidarCallback.ReportFixture: terrain only
// (category bit 1), the ray clipped to each hit so the closest remains.
func (e *Env) reportFixture(f *box2d.B2Fixture, point, normal box2d.B2Vec2, fraction float32) float32 {
	if f.GetFilterData().CategoryBits&1 == 0 {
		return -1
	}
	e.lidar[e.rayI].p2 = point
	e.lidar[e.rayI].fraction = float64(fraction)
	return fraction
}

// Reset starts a new episode: a fresh world, the terrain, clouds, walker
// and initial push drawn in Gymnasium's order, and the closing no-op step.
func (e *Env) Reset(seed uint64) []float64 {
	e.draws = e.injected
	if e.draws == nil {
		e.gen.Seed(seed)
		e.draws = e.gen
	}
	w := box2d.MakeB2World(box2d.MakeB2Vec2(0, f32(e.p.Gravity)))
	e.world = &w
	e.world.SetContactListener(contactListener{e})
	// ByteArena's default contact filter is nil, which makes every pair of
	// fixtures collide whatever their category and mask bits; Box2D's
	// default b2ContactFilter honours them (the walker's legs must not
	// touch each other or the hull).
	e.world.SetContactFilter(&contactFilter)
	e.fall, e.hasPrev, e.ground, e.steps, e.done = false, false, [4]bool{}, 0, false

	e.generateTerrain()
	e.generateClouds()

	p := &e.p
	legH := p.LegLength / scale
	legW := legWPx / scale
	legDown := legDownPx / scale
	initX := terrainStep * terrainStartpad / 2
	initY := terrainHeight + 2*legH

	bd := box2d.MakeB2BodyDef()
	bd.Type = box2d.B2BodyType.B2_dynamicBody
	bd.Position = vec(initX, initY)
	e.hull = e.world.CreateBody(&bd)
	poly := box2d.NewB2PolygonShape()
	var verts [len(hullPoly)]box2d.B2Vec2
	for i, v := range hullPoly {
		verts[i] = vec(v[0]/scale, v[1]/scale)
	}
	poly.Set(verts[:], len(verts))
	fd := box2d.MakeB2FixtureDef()
	fd.Shape, fd.Density, fd.Friction, fd.Restitution = poly, f32(p.HullDensity), f32(0.1), 0
	fd.Filter = box2d.MakeB2Filter()
	fd.Filter.CategoryBits, fd.Filter.MaskBits = 0x0020, 0x001
	e.hull.CreateFixtureFromDef(&fd)
	e.push = e.draws.Uniform(-initialRandom, initialRandom)
	e.hull.ApplyForceToCenter(vec(e.push, 0), true)

	for k, i := range [2]float64{-1, +1} {
		thigh := e.limb(initX, initY-legH/2-legDown, i*0.05, legW/2, legH/2)
		e.joint(2*k, e.hull, thigh, [2]float64{0, legDown}, [2]float64{0, legH / 2}, i, -0.8, 1.1)
		shin := e.limb(initX, initY-legH*3/2-legDown, i*0.05, 0.8*legW/2, legH/2)
		e.joint(2*k+1, thigh, shin, [2]float64{0, -legH / 2}, [2]float64{0, legH / 2}, 1, -1.6, -0.1)
		e.legs[2*k], e.legs[2*k+1] = thigh, shin
	}
	obs, _, _, _ := e.step([]float64{0, 0, 0, 0})
	e.steps = 0
	return obs
}

// limb creates a thigh or shin: a dynamic box of half sizes hw, hh.
func (e *Env) limb(x, y, angle, hw, hh float64) *box2d.B2Body {
	bd := box2d.MakeB2BodyDef()
	bd.Type = box2d.B2BodyType.B2_dynamicBody
	bd.Position = vec(x, y)
	bd.Angle = f32(angle)
	b := e.world.CreateBody(&bd)
	box := box2d.NewB2PolygonShape()
	box.SetAsBox(f32(hw), f32(hh))
	fd := box2d.MakeB2FixtureDef()
	fd.Shape, fd.Density, fd.Restitution = box, 1.0, 0
	fd.Filter = box2d.MakeB2Filter()
	fd.Filter.CategoryBits, fd.Filter.MaskBits = 0x0020, 0x001
	b.CreateFixtureFromDef(&fd)
	return b
}

// joint creates revolute joint k between a and b with a motor and limits.
func (e *Env) joint(k int, a, b *box2d.B2Body, anchorA, anchorB [2]float64, speed, lower, upper float64) {
	// The definition lives in the Env: CreateJoint takes an interface,
	// through which a local would escape to the heap.
	e.rjd = box2d.MakeB2RevoluteJointDef()
	rjd := &e.rjd
	rjd.BodyA, rjd.BodyB = a, b
	rjd.LocalAnchorA = vec(anchorA[0], anchorA[1])
	rjd.LocalAnchorB = vec(anchorB[0], anchorB[1])
	rjd.EnableMotor, rjd.EnableLimit = true, true
	rjd.MaxMotorTorque = f32(e.p.MotorsTorque)
	rjd.MotorSpeed = f32(speed)
	rjd.LowerAngle, rjd.UpperAngle = f32(lower), f32(upper)
	// pybox2d's revoluteJointDef(bodyA=…, bodyB=…) sets the reference
	// angle to bodyB.angle − bodyA.angle.
	rjd.ReferenceAngle = b.GetAngle() - a.GetAngle() // in float32, as pybox2d's Python float of float32 values rounds back
	e.joints[k] = e.world.CreateJoint(rjd).(*box2d.B2RevoluteJoint)
}

// CheckAction returns an error for an action that is not 4 finite values.
func (e *Env) CheckAction(action []float64) error {
	if len(action) != 4 {
		return fmt.Errorf("%s: action has %d values, want 4 (hip 0, knee 0, hip 1, knee 1)", e.name, len(action))
	}
	for i, a := range action {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("%s: action[%d] = %v is not finite", e.name, i, a)
		}
	}
	return nil
}

// Step applies action for one time step (1/50 s). An invalid action panics;
// check user input with CheckAction.
func (e *Env) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool) {
	if e.world == nil || e.done {
		panic("bipedal: Step before Reset or after the episode ended")
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

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func clip01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// setMotor sets a joint's motor as Box2D 2.3 does: the bodies woken (their
// sleep timers restarted only if asleep), speed and torque written.
func setMotor(j *box2d.B2RevoluteJoint, speed, torque float64) {
	for _, b := range [2]*box2d.B2Body{j.M_bodyA, j.M_bodyB} {
		if !b.IsAwake() {
			b.SetAwake(true)
		}
	}
	j.M_motorSpeed, j.M_maxMotorTorque = f32(speed), f32(torque)
}

func (e *Env) step(action []float64) ([]float64, float64, bool, bool) {
	speeds := [4]float64{speedHip, speedKnee, speedHip, speedKnee}
	for k, j := range e.joints {
		setMotor(j, speeds[k]*sign(action[k]), e.p.MotorsTorque*clip01(math.Abs(action[k])))
	}

	e.world.Step(1.0/fps, 6*30, 2*30)

	pos, vel := e.hull.GetPosition(), e.hull.GetLinearVelocity()
	for i := range e.lidar {
		r := &e.lidar[i]
		r.fraction = 1.0
		r.p1 = pos
		a := 1.5 * float64(i) / 10.0
		r.p2 = vec(float64(pos.X)+math.Sin(a)*lidarRange, float64(pos.Y)-math.Cos(a)*lidarRange)
		e.rayI = i
		e.world.RayCast(e.lidarCB, r.p1, r.p2)
	}

	s := &e.state
	s[0] = float64(e.hull.GetAngle())
	s[1] = 2.0 * float64(e.hull.GetAngularVelocity()) / fps
	s[2] = 0.3 * float64(vel.X) * (viewportW / scale) / fps
	s[3] = 0.3 * float64(vel.Y) * (viewportH / scale) / fps
	for k := range 2 {
		hip, knee := e.joints[2*k], e.joints[2*k+1]
		b := 4 + 5*k
		s[b] = float64(hip.GetJointAngle())
		s[b+1] = float64(hip.GetJointSpeed()) / speedHip
		s[b+2] = float64(knee.GetJointAngle()) + 1.0
		s[b+3] = float64(knee.GetJointSpeed()) / speedKnee
		s[b+4] = 0
		if e.ground[2*k+1] {
			s[b+4] = 1
		}
	}
	for i, r := range e.lidar {
		s[14+i] = r.fraction
	}

	// moving forward is rewarded (300 on completion); keep the head straight
	x := float64(pos.X)
	shaping := 130 * x / scale
	shaping -= 5.0 * math.Abs(s[0])
	reward := 0.0
	if e.hasPrev {
		reward = shaping - e.prevShaping
	}
	e.prevShaping, e.hasPrev = shaping, true
	for _, a := range action {
		reward -= e.torqueCostK * clip01(math.Abs(a))
	}
	terminated := false
	if e.fall || x < 0 {
		reward, terminated = -100, true
	}
	if x > float64(terrainLength-e.terrain.grass)*terrainStep {
		terminated = true
	}
	for i, v := range s {
		e.obs[i] = float64(float32(v))
	}
	return e.obs[:], reward, terminated, false
}

// HullState is the hull's Box2D state, for locating divergences: x, y,
// angle, vx, vy, angular velocity (world units).
func (e *Env) HullState() [6]float64 {
	p, v := e.hull.GetPosition(), e.hull.GetLinearVelocity()
	return [6]float64{float64(p.X), float64(p.Y), float64(e.hull.GetAngle()), float64(v.X), float64(v.Y), float64(e.hull.GetAngularVelocity())}
}

// Fell reports whether the hull touched the ground (Gymnasium's game_over).
func (e *Env) Fell() bool { return e.fall }
