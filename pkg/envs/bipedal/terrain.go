package bipedal

import (
	"math"

	box2d "github.com/fedirl/fedirl/third_party/box2d32"
)

// Terrain kinds of Gymnasium's generator.
const (
	grass = iota
	stump
	stairs
	pit
	nStates
)

// Terrain is the ground of an episode: the 200 surface points (world
// units) and the hardcore obstacles' polygons.
type Terrain struct {
	X, Y      [terrainLength]float64
	Obstacles [][4][2]float64 // stumps, stair steps and pit walls, in creation order
	grass     int             // Gymnasium's terrain_grass
}

// Cloud is one of the ten background clouds: five vertices (world units).
type Cloud [5][2]float64

// Terrain returns the current episode's ground.
func (e *Env) Terrain() *Terrain { return &e.terrain }

// Clouds returns the current episode's clouds.
func (e *Env) Clouds() []Cloud { return e.clouds[:] }

// staticPoly creates a static body with one polygon fixture, as
// world.CreateStaticBody(fixtures=fd_polygon) does.
func (e *Env) staticPoly(poly [4][2]float64) {
	bd := box2d.MakeB2BodyDef()
	b := e.world.CreateBody(&bd)
	shape := box2d.NewB2PolygonShape()
	var v [4]box2d.B2Vec2
	for i, p := range poly {
		v[i] = vec(p[0], p[1])
	}
	shape.Set(v[:], 4)
	fd := box2d.MakeB2FixtureDef()
	fd.Shape, fd.Friction = shape, f32(e.p.Friction)
	fd.Filter = box2d.MakeB2Filter()
	b.CreateFixtureFromDef(&fd)
	e.terrain.Obstacles = append(e.terrain.Obstacles, poly)
}

// generateTerrain is Gymnasium's _generate_terrain (generated, not designed, metadata).
func (e *Env) generateTerrain() {
	t := &e.terrain
	t.Obstacles = t.Obstacles[:0]
	t.grass = terrainGrass
	state := grass
	velocity := 0.0
	y := terrainHeight
	counter := int64(terrainStartpad)
	oneshot := false
	var stairSteps, stairWidth, stairHeight int64
	originalY := 0.0
	for i := range terrainLength {
		x := float64(i) * terrainStep
		t.X[i] = x
		switch {
		case state == grass && !oneshot:
			velocity = 0.8*velocity + 0.01*sign(terrainHeight-y)
			if i > terrainStartpad {
				velocity += e.p.TerrainRoughness * e.draws.Uniform(-1, 1) / scale
			}
			y += velocity
		case state == pit && oneshot:
			counter = e.draws.Integers(3, 5)
			poly := [4][2]float64{{x, y}, {x + terrainStep, y}, {x + terrainStep, y - 4*terrainStep}, {x, y - 4*terrainStep}}
			e.staticPoly(poly)
			for k := range poly {
				poly[k][0] += terrainStep * float64(counter)
			}
			e.staticPoly(poly)
			counter += 2
			originalY = y
		case state == pit && !oneshot:
			y = originalY
			if counter > 1 {
				y -= 4 * terrainStep
			}
		case state == stump && oneshot:
			counter = e.draws.Integers(1, 3)
			c := float64(counter)
			e.staticPoly([4][2]float64{{x, y}, {x + c*terrainStep, y}, {x + c*terrainStep, y + c*terrainStep}, {x, y + c*terrainStep}})
		case state == stairs && oneshot:
			stairHeight = -1
			if e.draws.Random() > 0.5 {
				stairHeight = +1
			}
			stairWidth = e.draws.Integers(4, 5)
			stairSteps = e.draws.Integers(3, 5)
			originalY = y
			for s := range stairSteps {
				x0 := x + float64(s*stairWidth)*terrainStep
				x1 := x + float64((1+s)*stairWidth)*terrainStep
				y0 := y + float64(s*stairHeight)*terrainStep
				y1 := y + float64(-1+s*stairHeight)*terrainStep
				e.staticPoly([4][2]float64{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}})
			}
			counter = stairSteps * stairWidth
		case state == stairs && !oneshot:
			s := stairSteps*stairWidth - counter - stairHeight
			n := float64(s) / float64(stairWidth)
			y = originalY + (n*float64(stairHeight))*terrainStep
		}
		oneshot = false
		t.Y[i] = y
		counter--
		if counter == 0 {
			counter = e.draws.Integers(int64(t.grass/2), int64(t.grass))
			if state == grass && e.p.Hardcore {
				state = int(e.draws.Integers(1, nStates))
			} else {
				state = grass
			}
			oneshot = true
		}
	}
	for i := range terrainLength - 1 {
		bd := box2d.MakeB2BodyDef()
		b := e.world.CreateBody(&bd)
		edge := box2d.NewB2EdgeShape()
		edge.Set(vec(t.X[i], t.Y[i]), vec(t.X[i+1], t.Y[i+1]))
		fd := box2d.MakeB2FixtureDef()
		fd.Shape, fd.Friction = edge, f32(e.p.Friction)
		fd.Filter = box2d.MakeB2Filter()
		fd.Filter.CategoryBits = 0x0001
		b.CreateFixtureFromDef(&fd)
	}
}

// generateClouds is Gymnasium's _generate_clouds: drawn only to be
// rendered, but from the same generator, before the initial push.
func (e *Env) generateClouds() {
	for i := range e.clouds {
		x := e.draws.Uniform(0, terrainLength) * terrainStep
		y := viewportH / scale * 3 / 4
		for a := range 5 {
			px := x + 15*terrainStep*math.Sin(3.14*2*float64(a)/5) + e.draws.Uniform(0, 5*terrainStep)
			py := y + 5*terrainStep*math.Cos(3.14*2*float64(a)/5) + e.draws.Uniform(0, 5*terrainStep)
			e.clouds[i][a] = [2]float64{px, py}
		}
	}
}
