package box2d_test

import (
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/fedirl/fedirl/third_party/box2d"
)

// TestFreeFall: a lone body under gravity follows Box2D's semi-implicit
// Euler integration in closed form: after n steps of h, v = n·g·h and
// y = y0 + g·h²·n(n+1)/2, with x, the angle and the spin unchanged.
func TestFreeFall(t *testing.T) {
	const g, h, y0 = -9.8, 1.0 / 60, 100.0
	s := newScene(g)
	b := s.body(dyn, 3, y0, 0.25)
	s.fixture(b, box(0.5, 0.25), 2, 0.3, 0)
	for n := 1; n <= 120; n++ { // 2 s: 19.6 m/s, under Box2D's 120 m/s translation cap
		s.world.Step(h, 8, 3)
		p, v := b.GetPosition(), b.GetLinearVelocity()
		wantV := float64(n) * g * h
		wantY := y0 + g*h*h*float64(n*(n+1))/2
		if math.Abs(v.Y-wantV) > 1e-12*math.Abs(wantV) || math.Abs(p.Y-wantY) > 1e-11*y0 {
			t.Fatalf("step %d: y = %.15g, vy = %.15g; closed form %.15g, %.15g", n, p.Y, v.Y, wantY, wantV)
		}
		if p.X != 3 || v.X != 0 || b.GetAngle() != 0.25 || b.GetAngularVelocity() != 0 {
			t.Fatalf("step %d: x = %v, vx = %v, angle = %v, spin = %v; want 3, 0, 0.25, 0", n, p.X, v.X, b.GetAngle(), b.GetAngularVelocity())
		}
		if !b.IsAwake() {
			t.Fatalf("step %d: a falling body went to sleep", n)
		}
	}
}

// TestRestingBodySleeps: a box dropped onto the ground comes to rest on
// it (centre at its half-height plus the shapes' skins less the allowed
// penetration), falls asleep
// once it has been still for B2_timeToSleep, stays asleep (and stops
// moving) while nothing touches it, and wakes when pushed.
func TestRestingBodySleeps(t *testing.T) {
	const h = 1.0 / 60
	s := newScene(-10)
	ground := s.body(0, 0, 0, 0)
	s.fixture(ground, edge(-20, 0, 20, 0), 0, 0.6, 0)
	b := s.body(dyn, 0, 2, 0)
	s.fixture(b, box(0.5, 0.5), 1, 0.6, 0)
	asleepAt, stillSince := -1, -1
	for n := 1; n <= 600 && asleepAt < 0; n++ {
		s.world.Step(h, 8, 3)
		v := b.GetLinearVelocity()
		if math.Hypot(v.X, v.Y) > box2d.B2_linearSleepTolerance || math.Abs(b.GetAngularVelocity()) > box2d.B2_angularSleepTolerance {
			stillSince = -1
		} else if stillSince < 0 {
			stillSince = n
		}
		if !b.IsAwake() {
			asleepAt = n
		}
	}
	if asleepAt < 0 {
		t.Fatal("the box never fell asleep in 10 s")
	}
	if stillSince < 0 || float64(asleepAt-stillSince+1)*h < box2d.B2_timeToSleep-1e-9 {
		t.Fatalf("asleep at step %d after being still since step %d: less than B2_timeToSleep = %v s", asleepAt, stillSince, box2d.B2_timeToSleep)
	}
	// Box2D keeps polygons and edges a skin of B2_polygonRadius apart and
	// lets contacts sink by B2_linearSlop.
	rest := b.GetPosition()
	wantY := 0.5 + 2*box2d.B2_polygonRadius - box2d.B2_linearSlop
	if math.Abs(rest.Y-wantY) > 0.1*box2d.B2_linearSlop || math.Abs(rest.X) > 1e-6 || math.Abs(b.GetAngle()) > 1e-6 {
		t.Fatalf("at rest at %v, angle %v; want (0, %v), 0", rest, b.GetAngle(), wantY)
	}
	for range 120 {
		s.world.Step(h, 8, 3)
	}
	if b.IsAwake() || b.GetPosition() != rest {
		t.Fatalf("a sleeping body moved or woke by itself: awake %v at %v (was %v)", b.IsAwake(), b.GetPosition(), rest)
	}
	b.ApplyLinearImpulse(box2d.MakeB2Vec2(2, 0), b.GetWorldCenter(), true)
	s.world.Step(h, 8, 3)
	if !b.IsAwake() || b.GetPosition().X <= rest.X {
		t.Fatalf("pushed: awake %v at %v; want awake and moved right", b.IsAwake(), b.GetPosition())
	}
}

// TestStepAllocatesNothing: once the world's buffers have grown, a step
// allocates nothing: in the pyramid (many resting contacts), the joints
// scene (joints, contacts, a bullet) and at the lunar lander's solver
// settings, each run through its golden sequence and then measured over
// 200 more steps.
func TestStepAllocatesNothing(t *testing.T) {
	for _, sc := range goldenScenes {
		if sc.name == "shapes" { // new pairs of bodies keep meeting: see TestContactsArePooled
			continue
		}
		s := sc.make()
		s.log.events = make([]int, 0, 1<<20) // the test's listener records into a preallocated slice
		for range s.steps {
			s.world.Step(s.dt, s.vel, s.pos)
		}
		if n := testing.AllocsPerRun(200, func() { s.world.Step(s.dt, s.vel, s.pos) }); n != 0 {
			t.Errorf("%s: %v allocations per step, want 0", sc.name, n)
		}
	}
}

// TestContactsArePooled: a box that keeps jumping off the ground and
// landing again has its contact destroyed and created again each time;
// after the first landing this allocates nothing (the contact, its
// manifold and edges are reused) and the box lands the same way each time.
func TestContactsArePooled(t *testing.T) {
	const h = 1.0 / 60
	s := newScene(-10)
	ground := s.body(0, 0, 0, 0)
	s.fixture(ground, edge(-20, 0, 20, 0), 0, 0.6, 0)
	b := s.body(dyn, 0, 0.6, 0)
	s.fixture(b, box(0.5, 0.5), 1, 0.6, 0)
	s.log.events = make([]int, 0, 1<<16)
	jump := func() {
		for k := range 90 {
			if k == 0 {
				b.SetLinearVelocity(box2d.MakeB2Vec2(0, 5)) // 1.25 m up, 1 s in the air
			}
			s.world.Step(h, 8, 3)
		}
	}
	jump()
	jump()
	begins := func() (n int) {
		for i := 0; i < len(s.log.events); i += 3 {
			if s.log.events[i] == 1 {
				n++
			}
		}
		return n
	}
	before := begins()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 5 {
		jump()
	}
	runtime.ReadMemStats(&m1)
	if got := begins() - before; got != 5 {
		t.Fatalf("%d landings (contacts begun) in 5 jumps, want 5", got)
	}
	if n := m1.Mallocs - m0.Mallocs; n != 0 {
		t.Errorf("%d allocations over 5 jumps (5 contacts destroyed and made again), want 0", n)
	}
}

// TestWorldsStepConcurrently: worlds stepped on several goroutines at once
// give the trajectories they give alone (upstream's global counters and
// lazily filled contact registers were data races; run with -race).
func TestWorldsStepConcurrently(t *testing.T) {
	want := make([]string, len(goldenScenes))
	for i, sc := range goldenScenes {
		want[i], _ = sc.make().run()
	}
	got := make([]string, len(goldenScenes))
	var wg sync.WaitGroup
	for i, sc := range goldenScenes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = sc.make().run()
		}()
	}
	wg.Wait()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: stepped concurrently, the trajectory differs", goldenScenes[i].name)
		}
	}
}

// TestProfilingIsOptIn: GetProfile reports zeros unless SetProfiling(true)
// turned the timings on, and then the step's time.
func TestProfilingIsOptIn(t *testing.T) {
	s := pyramid()
	s.world.Step(s.dt, s.vel, s.pos)
	if p := s.world.GetProfile(); p.Step != 0 || p.Solve != 0 {
		t.Fatalf("profiling off: profile %+v, want zeros", p)
	}
	s.world.SetProfiling(true)
	s.world.Step(s.dt, s.vel, s.pos)
	if p := s.world.GetProfile(); !(p.Step > 0 && p.Solve > 0 && p.Step >= p.Solve) {
		t.Fatalf("profiling on: profile %+v, want positive step and solve times", p)
	}
}
