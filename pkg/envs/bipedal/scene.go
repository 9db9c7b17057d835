package bipedal

import box2d "github.com/fedirl/fedirl/third_party/box2d32"

// Scene is what a renderer draws of the walker, in world units (metres,
// y up): the hull's and four limbs' polygons, the ten lidar rays from the
// hull to where each one stopped, and the hull's position.
type Scene struct {
	Hull  [][2]float64
	Limbs [4][][2]float64 // thigh 0, shin 0, thigh 1, shin 1
	Lidar [nLidar][2][2]float64
	HullX float64
	// Contacts are the shins' ground contacts (obs[8], obs[13]).
	Contacts [2]bool
}

// Scene fills s with the current state (reusing its slices).
func (e *Env) Scene(s *Scene) {
	s.Hull = polygonOf(s.Hull[:0], e.hull)
	for i, b := range e.legs {
		s.Limbs[i] = polygonOf(s.Limbs[i][:0], b)
	}
	for i, r := range e.lidar {
		s.Lidar[i] = [2][2]float64{{float64(r.p1.X), float64(r.p1.Y)}, {float64(r.p2.X), float64(r.p2.Y)}}
	}
	s.HullX = float64(e.hull.GetPosition().X)
	s.Contacts = [2]bool{e.ground[1], e.ground[3]}
}

// polygonOf appends the world vertices of b's (one, polygon) fixture.
func polygonOf(dst [][2]float64, b *box2d.B2Body) [][2]float64 {
	f := b.GetFixtureList()
	poly, ok := f.GetShape().(*box2d.B2PolygonShape)
	if !ok {
		return dst
	}
	xf := b.GetTransform()
	for k := 0; k < poly.M_count; k++ {
		v := box2d.B2TransformVec2Mul(xf, poly.M_vertices[k])
		dst = append(dst, [2]float64{float64(v.X), float64(v.Y)})
	}
	return dst
}

// GrassEnd is the x beyond which the episode ends (Gymnasium's (200 − terrain_grass)·TERRAIN_STEP).
func (e *Env) GrassEnd() float64 { return float64(terrainLength-e.terrain.grass) * terrainStep }

// View constants for renderers: Gymnasium's viewport in world units and its flag.
const (
	ViewportWidth  = viewportW / scale
	ViewportHeight = viewportH / scale
	Scale          = scale
)

// FlagX is the start flag's x (world units).
func FlagX() float64 { return terrainStep * 3 }

// TerrainHeight is the nominal ground height (world units).
func TerrainHeight() float64 { return terrainHeight }
