package box2d_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/third_party/box2d"
)

// updateGolden regenerates testdata/golden.txt from the code as it is:
// go test ./third_party/box2d -run TestGoldenScenes -update-golden. The
// committed file was generated from ByteArena/box2d v1.0.2 as copied into
// this fork, before any change to the engine; it pins every scene's
// trajectory bit for bit.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden.txt from the current code")

const goldenPath = "testdata/golden.txt"

// eventLog records the contact listener's calls, which the hash covers
// (their order decides game logic such as LunarLander's leg contacts).
type eventLog struct {
	ids    map[*box2d.B2Body]int
	events []int
	solves int
}

func (l *eventLog) pair(c box2d.B2ContactInterface) (int, int) {
	return l.ids[c.GetFixtureA().GetBody()], l.ids[c.GetFixtureB().GetBody()]
}

func (l *eventLog) BeginContact(c box2d.B2ContactInterface) {
	a, b := l.pair(c)
	l.events = append(l.events, 1, a, b)
}

func (l *eventLog) EndContact(c box2d.B2ContactInterface) {
	a, b := l.pair(c)
	l.events = append(l.events, 2, a, b)
}

func (l *eventLog) PreSolve(box2d.B2ContactInterface, box2d.B2Manifold) { l.solves++ }

func (l *eventLog) PostSolve(c box2d.B2ContactInterface, imp *box2d.B2ContactImpulse) {
	l.solves++
}

// scene is a world with its bodies in creation order and its step settings.
type scene struct {
	world        *box2d.B2World
	bodies       []*box2d.B2Body
	log          *eventLog
	dt           float64
	vel, pos     int
	steps        int
	perturbEvery int // apply a force to every dynamic body every perturbEvery steps (0: never)
}

func newScene(gravity float64) *scene {
	w := box2d.MakeB2World(box2d.MakeB2Vec2(0, gravity))
	s := &scene{world: &w, log: &eventLog{ids: map[*box2d.B2Body]int{}}, dt: 1.0 / 60, vel: 8, pos: 3, steps: 300}
	w.SetContactListener(s.log)
	return s
}

func (s *scene) body(typ uint8, x, y, angle float64) *box2d.B2Body {
	bd := box2d.MakeB2BodyDef()
	bd.Type = typ
	bd.Position.Set(x, y)
	bd.Angle = angle
	b := s.world.CreateBody(&bd)
	s.log.ids[b] = len(s.bodies)
	s.bodies = append(s.bodies, b)
	return b
}

func (s *scene) fixture(b *box2d.B2Body, shape box2d.B2ShapeInterface, density, friction, restitution float64) {
	fd := box2d.MakeB2FixtureDef()
	fd.Shape, fd.Density, fd.Friction, fd.Restitution = shape, density, friction, restitution
	b.CreateFixtureFromDef(&fd)
}

func box(hx, hy float64) *box2d.B2PolygonShape {
	p := box2d.NewB2PolygonShape()
	p.SetAsBox(hx, hy)
	return p
}

func circle(r float64) *box2d.B2CircleShape {
	c := box2d.NewB2CircleShape()
	c.M_radius = r
	return c
}

func edge(x1, y1, x2, y2 float64) *box2d.B2EdgeShape {
	e := box2d.NewB2EdgeShape()
	e.Set(box2d.MakeB2Vec2(x1, y1), box2d.MakeB2Vec2(x2, y2))
	return e
}

const dyn = 2 // box2d.B2BodyType.B2_dynamicBody

// pyramid: a 12-row pyramid of boxes on an edge: many contacts in one
// island, warm starting, the position solver's early exit, sleeping.
func pyramid() *scene {
	s := newScene(-10)
	ground := s.body(0, 0, 0, 0)
	s.fixture(ground, edge(-40, 0, 40, 0), 0, 0.6, 0)
	const rows = 12
	for i := 0; i < rows; i++ {
		for j := i; j < rows; j++ {
			b := s.body(dyn, -7.5+float64(i)*0.5625+float64(j-i)*1.125, 0.75+float64(i)*1.0, 0)
			s.fixture(b, box(0.5, 0.5), 5, 0.6, 0)
		}
	}
	s.steps = 400
	return s
}

// shapes: circles, polygons and a lander-like hull dropped on a chain of
// terrain edges, with restitution and friction; two separate islands.
func shapes() *scene {
	s := newScene(-9.8)
	ground := s.body(0, 0, 0, 0)
	hs := []float64{1, 0.4, 1.3, 0.2, 0.9, 1.6, 0.3, 1.1}
	for i := 0; i+1 < len(hs); i++ {
		s.fixture(ground, edge(-14+4*float64(i), hs[i], -10+4*float64(i), hs[i+1]), 0, 0.3, 0)
	}
	chain := box2d.MakeB2ChainShape()
	vs := []box2d.B2Vec2{box2d.MakeB2Vec2(20, 6), box2d.MakeB2Vec2(24, 2), box2d.MakeB2Vec2(28, 1), box2d.MakeB2Vec2(32, 3)}
	chain.CreateChain(vs, len(vs))
	s.fixture(ground, &chain, 0, 0.4, 0)
	for k := 0; k < 10; k++ {
		x, y := -12+2.7*float64(k), 6+0.9*float64(k%3)
		b := s.body(dyn, x, y, 0.3*float64(k))
		switch k % 3 {
		case 0:
			s.fixture(b, circle(0.3+0.05*float64(k)), 2, 0.5, 0.3)
		case 1:
			s.fixture(b, box(0.4, 0.2+0.03*float64(k)), 3, 0.2, 0.1)
		default:
			hull := box2d.NewB2PolygonShape()
			v := []box2d.B2Vec2{box2d.MakeB2Vec2(-0.47, 0.57), box2d.MakeB2Vec2(-0.57, 0), box2d.MakeB2Vec2(-0.57, -0.33),
				box2d.MakeB2Vec2(0.57, -0.33), box2d.MakeB2Vec2(0.57, 0), box2d.MakeB2Vec2(0.47, 0.57)}
			hull.Set(v, len(v))
			s.fixture(b, hull, 5, 0.1, 0)
		}
		b.SetLinearVelocity(box2d.MakeB2Vec2(0.5*float64(k%4)-0.7, 0))
	}
	for k := 0; k < 4; k++ { // onto the chain
		b := s.body(dyn, 21+3*float64(k), 9, 0)
		s.fixture(b, circle(0.4), 1, 0.6, 0.2)
	}
	s.steps = 500
	s.perturbEvery = 97
	return s
}

// joints: a revolute chain hanging from the ground, a motorised and
// limited revolute pair (the lander's legs), prismatic, distance, weld and
// wheel joints, and a fast bullet hitting a thin wall (time of impact).
func joints() *scene {
	s := newScene(-10)
	ground := s.body(0, 0, 0, 0)
	s.fixture(ground, edge(-40, 0, 40, 0), 0, 0.6, 0)
	s.fixture(ground, edge(20, 0, 20, 8), 0, 0.6, 0)
	prev := ground
	for i := 0; i < 8; i++ {
		b := s.body(dyn, -10+0.5+float64(i), 12, 0)
		s.fixture(b, box(0.5, 0.125), 20, 0.2, 0)
		jd := box2d.MakeB2RevoluteJointDef()
		jd.Initialize(prev, b, box2d.MakeB2Vec2(-10+float64(i), 12))
		s.world.CreateJoint(&jd)
		prev = b
	}
	hull := s.body(dyn, 0, 8, 0)
	s.fixture(hull, box(0.6, 0.35), 5, 0.1, 0)
	for k, i := range []float64{-1, 1} {
		leg := s.body(dyn, -i*0.66, 8, i*0.05)
		s.fixture(leg, box(0.066, 0.266), 1, 0.2, 0)
		jd := box2d.MakeB2RevoluteJointDef()
		jd.BodyA, jd.BodyB = hull, leg
		jd.LocalAnchorB = box2d.MakeB2Vec2(i*0.66, 0.6)
		jd.EnableMotor, jd.EnableLimit = true, true
		jd.MaxMotorTorque, jd.MotorSpeed = 40, 0.3*i
		jd.ReferenceAngle = i * 0.05
		if k == 0 {
			jd.LowerAngle, jd.UpperAngle = 0.4, 0.9
		} else {
			jd.LowerAngle, jd.UpperAngle = -0.9, -0.4
		}
		s.world.CreateJoint(&jd)
	}
	slider := s.body(dyn, 5, 5, 0)
	s.fixture(slider, box(0.5, 0.5), 2, 0.3, 0)
	pj := box2d.MakeB2PrismaticJointDef()
	pj.Initialize(ground, slider, box2d.MakeB2Vec2(5, 5), box2d.MakeB2Vec2(1, 1))
	pj.EnableLimit, pj.LowerTranslation, pj.UpperTranslation = true, -3, 2
	pj.EnableMotor, pj.MaxMotorForce, pj.MotorSpeed = true, 30, 1.5
	s.world.CreateJoint(&pj)
	a, b := s.body(dyn, 8, 6, 0), s.body(dyn, 10, 7, 0)
	s.fixture(a, circle(0.4), 1, 0.3, 0.2)
	s.fixture(b, box(0.3, 0.3), 1, 0.3, 0.2)
	dj := box2d.MakeB2DistanceJointDef()
	dj.Initialize(a, b, a.GetPosition(), b.GetPosition())
	dj.FrequencyHz, dj.DampingRatio = 2, 0.3
	s.world.CreateJoint(&dj)
	c := s.body(dyn, 12, 6, 0)
	s.fixture(c, box(0.5, 0.2), 1, 0.3, 0)
	wj := box2d.MakeB2WeldJointDef()
	wj.Initialize(b, c, box2d.MakeB2Vec2(11, 6.5))
	s.world.CreateJoint(&wj)
	car, wheel := s.body(dyn, -4, 2, 0), s.body(dyn, -3.5, 1.4, 0)
	s.fixture(car, box(0.8, 0.2), 1, 0.3, 0)
	s.fixture(wheel, circle(0.35), 1, 0.9, 0)
	whj := box2d.MakeB2WheelJointDef()
	whj.Initialize(car, wheel, wheel.GetPosition(), box2d.MakeB2Vec2(0, 1))
	whj.EnableMotor, whj.MotorSpeed, whj.MaxMotorTorque = true, -8, 20
	whj.FrequencyHz, whj.DampingRatio = 4, 0.7
	s.world.CreateJoint(&whj)
	wall := s.body(0, 16, 3, 0)
	s.fixture(wall, box(0.05, 3), 0, 0.5, 0)
	bd := box2d.MakeB2BodyDef()
	bd.Type, bd.Bullet = dyn, true
	bd.Position.Set(6, 3)
	bullet := s.world.CreateBody(&bd)
	s.log.ids[bullet] = len(s.bodies)
	s.bodies = append(s.bodies, bullet)
	s.fixture(bullet, circle(0.1), 10, 0.1, 0)
	bullet.SetLinearVelocity(box2d.MakeB2Vec2(400, 0))
	s.steps = 400
	return s
}

// lander: the lunar lander's own settings (1/50 s, 180 velocity and 60
// position iterations), its hull and legs on motorised, limited revolute
// joints falling onto a terrain, left to come to rest and fall asleep.
func lander() *scene {
	s := joints()
	s.dt, s.vel, s.pos, s.steps = 1.0/50, 180, 60, 250
	return s
}

func putBits(h hash.Hash, xs ...float64) {
	var buf [8]byte
	for _, x := range xs {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
}

// run steps the scene and returns the SHA-256 of every step's body
// states (positions, angles, velocities, awake flags), the contact
// events and the number of solver callbacks, and the number of bodies
// asleep at the end.
func (s *scene) run() (sum string, asleep int) {
	h := sha256.New()
	for k := 0; k < s.steps; k++ {
		if s.perturbEvery > 0 && k%s.perturbEvery == s.perturbEvery-1 {
			for i, b := range s.bodies {
				if b.GetType() == dyn {
					b.ApplyLinearImpulse(box2d.MakeB2Vec2(float64(i%5)-2, 3), b.GetWorldCenter(), true)
				}
			}
		}
		s.world.Step(s.dt, s.vel, s.pos)
		for _, b := range s.bodies {
			p, v := b.GetPosition(), b.GetLinearVelocity()
			awake := 0.0
			if b.IsAwake() {
				awake = 1
			}
			putBits(h, p.X, p.Y, b.GetAngle(), v.X, v.Y, b.GetAngularVelocity(), awake)
		}
		for _, ev := range s.log.events {
			putBits(h, float64(ev))
		}
		putBits(h, float64(s.log.solves), float64(s.world.GetContactCount()))
		s.log.events = s.log.events[:0]
	}
	for _, b := range s.bodies {
		if b.GetType() == dyn && !b.IsAwake() {
			asleep++
		}
	}
	return hex.EncodeToString(h.Sum(nil)), asleep
}

// revolutes: an island whose joints are all revolute, in every limit
// state (equal limits with a motor, lower and upper limits pushed both
// ways, no limit with a motor, neither), kicked now and then, its end
// hitting the ground, at the lander's 1/50 s and 180/60 iterations.
func revolutes() *scene {
	s := newScene(-10)
	ground := s.body(0, 0, 0, 0)
	s.fixture(ground, edge(-40, 0, 40, 0), 0, 0.6, 0)
	anchor := s.body(0, 0, 6, 0)
	prev := anchor
	for i := 0; i < 4; i++ {
		b := s.body(dyn, 0.6+1.2*float64(i), 6, 0)
		s.fixture(b, box(0.6, 0.1), 3, 0.4, 0)
		jd := box2d.MakeB2RevoluteJointDef()
		jd.Initialize(prev, b, box2d.MakeB2Vec2(1.2*float64(i), 6))
		switch i {
		case 0: // equal limits and a motor
			jd.EnableLimit, jd.LowerAngle, jd.UpperAngle = true, -0.3, -0.3
			jd.EnableMotor, jd.MaxMotorTorque, jd.MotorSpeed = true, 50, 1
		case 1: // limits both ways, no motor
			jd.EnableLimit, jd.LowerAngle, jd.UpperAngle = true, -0.25, 0.2
		case 2: // a motor, no limit
			jd.EnableMotor, jd.MaxMotorTorque, jd.MotorSpeed = true, 5, -2
		}
		s.world.CreateJoint(&jd)
		prev = b
	}
	s.dt, s.vel, s.pos, s.steps, s.perturbEvery = 1.0/50, 180, 60, 300, 37
	return s
}

var goldenScenes = []struct {
	name string
	make func() *scene
}{{"pyramid", pyramid}, {"shapes", shapes}, {"joints", joints}, {"lander", lander}, {"revolutes", revolutes}}

// TestGoldenScenes steps four scenes that between them use every shape
// pair, most joint types, continuous collision, islands and sleeping, and
// requires every step's state to be bit-identical to the upstream code's.
func TestGoldenScenes(t *testing.T) {
	if box2d.FusesMulAdd() && !*updateGolden {
		t.Skip("this build fuses multiply-adds; the golden pins unfused amd64 arithmetic")
	}
	var got []string
	for _, sc := range goldenScenes {
		sum, asleep := sc.make().run()
		got = append(got, fmt.Sprintf("%s %s asleep=%d", sc.name, sum, asleep))
	}
	if *updateGolden {
		text := "# box2d golden scenes: name sha256(per-step body states, contact events) bodies-asleep-at-end\n" +
			"# made by TestGoldenScenes -update-golden (golden_test.go)\n" + strings.Join(got, "\n") + "\n"
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(goldenPath)
	if err != nil {
		t.Fatalf("%s: %v (make it with -update-golden)", goldenPath, err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s has %d scenes, the test has %d", goldenPath, len(want), len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("scene differs from the golden:\n got  %s\n want %s", got[i], want[i])
		}
	}
}
