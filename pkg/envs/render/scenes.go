package render

import (
	"math"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/bipedal"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
)

func newDrawer(e envs.Env, name string) drawer {
	switch v := e.(type) {
	case *bipedal.Env:
		return &walkerDrawer{e: v}
	case *lunar.Env:
		return &lunarDrawer{e: v}
	case classic.Stateful:
		switch name {
		case "CartPole-v1", "Pendulum-v1", "Acrobot-v1":
			return &classicDrawer{e: v, name: name}
		}
	}
	return &barsDrawer{space: e.ObservationSpace()}
}

// walkerDrawer draws BipedalWalker as Gymnasium's render does: sky,
// clouds (with half the parallax), the terrain and obstacles, the start
// flag, the lidar, the legs and the hull, following the hull.
type walkerDrawer struct {
	e     *bipedal.Env
	scene bipedal.Scene
	buf   [][2]float64
}

func (d *walkerDrawer) draw(c *canvas, _ []float64) {
	e := d.e
	e.Scene(&d.scene)
	s := &d.scene
	px := float64(c.w) / bipedal.ViewportWidth   // pixels per metre across
	pxY := float64(c.h) / bipedal.ViewportHeight // and up
	scroll := s.HullX - bipedal.ViewportWidth/5  // Gymnasium's camera
	py := func(y float64) float64 { return float64(c.h) - y*pxY }
	toPix := func(dst [][2]float64, pts [][2]float64, parallax float64) [][2]float64 {
		dst = dst[:0]
		for _, p := range pts {
			dst = append(dst, [2]float64{(p[0] - scroll*parallax) * px, py(p[1])})
		}
		return dst
	}
	c.rect(0, 0, c.w, c.h, colSky)
	for _, cl := range e.Clouds() {
		pts := make([][2]float64, len(cl))
		for i, p := range cl {
			pts[i] = p
		}
		d.buf = toPix(d.buf, pts, 0.5)
		c.fill(d.buf, colWhite)
	}
	t := e.Terrain()
	for i := 0; i+1 < len(t.X); i++ {
		if t.X[i+1] < scroll || t.X[i] > scroll+bipedal.ViewportWidth {
			continue
		}
		poly := [][2]float64{{t.X[i], t.Y[i]}, {t.X[i+1], t.Y[i+1]}, {t.X[i+1], 0}, {t.X[i], 0}}
		d.buf = toPix(d.buf, poly, 1)
		c.fill(d.buf, colGround)
		c.line(d.buf[0][0], d.buf[0][1], d.buf[1][0], d.buf[1][1], 2, colGrass)
	}
	for _, o := range t.Obstacles {
		d.buf = toPix(d.buf, o[:], 1)
		c.fill(d.buf, colWhite)
		c.outline(d.buf, colGrey)
	}
	fx := (bipedal.FlagX() - scroll) * px
	fy := py(bipedal.TerrainHeight())
	c.line(fx, fy, fx, fy-50*px/bipedal.Scale, 1, colBlack)
	c.fill([][2]float64{{fx, fy - 50*px/bipedal.Scale}, {fx, fy - 40*px/bipedal.Scale}, {fx + 25*px/bipedal.Scale, fy - 45*px/bipedal.Scale}}, colFlag)
	for _, r := range s.Lidar {
		a := toPix(nil, [][2]float64{r[0], r[1]}, 1)
		c.line(a[0][0], a[0][1], a[1][0], a[1][1], 1, colLidar)
	}
	for i, l := range s.Limbs {
		col := colLeg0
		if i >= 2 {
			col = colLeg1
		}
		d.buf = toPix(d.buf, l, 1)
		c.fill(d.buf, col)
		c.outline(d.buf, colHullLine)
	}
	d.buf = toPix(d.buf, s.Hull, 1)
	c.fill(d.buf, colHull)
	c.outline(d.buf, colHullLine)
	if end := (e.GrassEnd() - scroll) * px; end < float64(c.w) {
		c.line(end, 0, end, float64(c.h), 1, colGrey)
	}
}

// lunarDrawer draws the lander (its body and legs' attitude) over the pad.
type lunarDrawer struct{ e *lunar.Env }

func (d *lunarDrawer) draw(c *canvas, _ []float64) {
	ph := d.e.Physics()
	const W, H = 600.0 / 30, 400.0 / 30
	sx, sy := float64(c.w)/W, float64(c.h)/H
	c.rect(0, 0, c.w, c.h, colBlack)
	pad := float64(c.h) - ph.HelipadY*sy
	c.rect(0, int(pad), c.w, c.h, colGrey)
	c.line(float64(c.w)/2-2*sx, pad, float64(c.w)/2+2*sx, pad, 3, colYellow)
	body := [][2]float64{{-14, 17}, {-17, 0}, {-17, -10}, {17, -10}, {17, 0}, {14, 17}}
	sin, cos := math.Sincos(ph.Angle)
	pts := make([][2]float64, len(body))
	for i, v := range body {
		x, y := v[0]/30, v[1]/30
		pts[i] = [2]float64{(ph.X + x*cos - y*sin) * sx, float64(c.h) - (ph.Y+x*sin+y*cos)*sy}
	}
	c.fill(pts, colHull)
	c.outline(pts, colWhite)
	for i, side := range []float64{-1, 1} {
		x, y := side*20.0/30, -18.0/30
		lx, ly := ph.X+x*cos-y*sin, ph.Y+x*sin+y*cos
		col := colWhite
		if ph.LegContacts[i] {
			col = colYellow
		}
		c.line((ph.X+side*10.0/30*cos)*sx, float64(c.h)-(ph.Y+side*10.0/30*sin)*sy, lx*sx, float64(c.h)-ly*sy, 3, col)
	}
}

// classicDrawer draws CartPole, Pendulum and Acrobot from their states.
type classicDrawer struct {
	e     classic.Stateful
	name  string
	state []float64
}

func (d *classicDrawer) draw(c *canvas, _ []float64) {
	d.state = d.e.State(d.state)
	s := d.state
	c.rect(0, 0, c.w, c.h, colWhite)
	w, h := float64(c.w), float64(c.h)
	switch d.name {
	case "CartPole-v1":
		scale := w / 4.8 // Gymnasium: x in [−2.4, 2.4] fills the width
		cx, cy := w/2+s[0]*scale, h*0.65
		c.line(0, cy, w, cy, 1, colBlack)
		c.rect(int(cx-25), int(cy-15), int(cx+25), int(cy+15), colBlack)
		l := 1.0 * scale // pole length 2·0.5
		c.line(cx, cy-8, cx+l*math.Sin(s[2]), cy-8-l*math.Cos(s[2]), 8, colPole)
	case "Pendulum-v1":
		r := math.Min(w, h) * 0.4
		cx, cy := w/2, h/2
		c.line(cx, cy, cx+r*math.Sin(s[0]), cy-r*math.Cos(s[0]), 10, colFlag)
		c.rect(int(cx-4), int(cy-4), int(cx+4), int(cy+4), colBlack)
	case "Acrobot-v1":
		r := math.Min(w, h) * 0.22
		cx, cy := w/2, h/2
		x1, y1 := cx+r*math.Sin(s[0]), cy+r*math.Cos(s[0])
		x2, y2 := x1+r*math.Sin(s[0]+s[1]), y1+r*math.Cos(s[0]+s[1])
		c.line(0, cy-r, w, cy-r, 1, colBlack) // the goal height, one link above the pivot
		c.line(cx, cy, x1, y1, 8, colBlue)
		c.line(x1, y1, x2, y2, 8, colBlue)
		c.rect(int(cx-4), int(cy-4), int(cx+4), int(cy+4), colYellow)
	}
}

// barsDrawer draws each observation coordinate as a bar, scaled by the
// observation space's bounds where they are finite and by the largest
// magnitude seen so far otherwise.
type barsDrawer struct {
	space envs.Space
	scale []float64
}

func (d *barsDrawer) draw(c *canvas, obs []float64) {
	c.rect(0, 0, c.w, c.h, colWhite)
	n := len(obs)
	if n == 0 {
		return
	}
	if d.scale == nil {
		d.scale = make([]float64, n)
	}
	mid := float64(c.h) / 2
	c.line(0, mid, float64(c.w), mid, 1, colBlack)
	bw := float64(c.w) / float64(n)
	for i, v := range obs {
		s := 0.0
		if i < len(d.space.High) && !math.IsInf(d.space.High[i], 0) && !math.IsInf(d.space.Low[i], 0) {
			s = math.Max(math.Abs(d.space.High[i]), math.Abs(d.space.Low[i]))
		}
		d.scale[i] = math.Max(d.scale[i], math.Abs(v))
		if s == 0 {
			s = d.scale[i]
		}
		if s == 0 {
			continue
		}
		y := mid - v/s*mid*0.8
		c.rect(int(float64(i)*bw+2), int(math.Min(y, mid)), int(float64(i+1)*bw-2), int(math.Max(y, mid)), colBlue)
	}
}
