// Package render draws episodes of fedirl's environments as animated GIFs
// (the standard library's image/gif): BipedalWalker's terrain, walker and
// lidar as Gymnasium draws them, the classic-control systems (CartPole's
// cart and pole, Pendulum's rod, Acrobot's two links), LunarLander's lander
// over its pad, and for any other environment a bar chart of the
// observation. Every frame carries the step and the return so far.
//
// It simulates nothing: Episode steps the environment it is given with the
// policy it is given and draws what the environment exposes.
package render

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Options configure an episode's clip. Zero values take the defaults.
type Options struct {
	// Width and Height are the frame size in pixels [600 × 400, Gymnasium's viewport].
	Width, Height int
	// Every draws one frame per this many steps [2]; the first and last steps are always drawn.
	Every int
	// MaxSteps stops the episode after this many steps [the environment's TimeLimit].
	MaxSteps int
	// Delay is each frame's display time in hundredths of a second [Every·2, real time at 50 steps/s].
	Delay int
}

func (o Options) withDefaults() (Options, error) {
	if o.Width == 0 {
		o.Width = 600
	}
	if o.Height == 0 {
		o.Height = 400
	}
	if o.Every == 0 {
		o.Every = 2
	}
	if o.Delay == 0 {
		o.Delay = 2 * o.Every
	}
	switch {
	case o.Width < 64 || o.Height < 48 || o.Width > 4096 || o.Height > 4096:
		return o, fmt.Errorf("render: frame size %d×%d outside 64×48 … 4096×4096", o.Width, o.Height)
	case o.Every < 1:
		return o, fmt.Errorf("render: every = %d, want ≥ 1", o.Every)
	case o.MaxSteps < 0:
		return o, fmt.Errorf("render: max steps %d, want ≥ 0", o.MaxSteps)
	case o.Delay < 1:
		return o, fmt.Errorf("render: delay %d, want ≥ 1", o.Delay)
	}
	return o, nil
}

// Validate returns the error Episode returns for options out of range (a
// frame size outside 64×48 … 4096×4096, every, max steps or delay below
// its minimum), so that a caller can check them before the episode.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// Result summarizes the rendered episode.
type Result struct {
	Steps      int     `json:"steps"`
	Return     float64 `json:"return"`
	Terminated bool    `json:"terminated"`
	Truncated  bool    `json:"truncated"`
	Frames     int     `json:"frames"`
}

// Policy chooses the action for an observation; the returned slice may be reused.
type Policy func(obs []float64) []float64

// Episode runs one episode of e from Reset(seed) under policy and returns
// its clip. name is the Gymnasium id (it selects the drawing).
func Episode(e envs.Env, name string, seed uint64, policy Policy, opt Options) (*gif.GIF, Result, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, Result{}, err
	}
	if policy == nil {
		return nil, Result{}, errors.New("render: nil policy")
	}
	d := newDrawer(e, name)
	g := &gif.GIF{LoopCount: 0}
	var res Result
	frame := func(obs []float64) {
		c := newCanvas(opt.Width, opt.Height)
		d.draw(c, obs)
		c.text(8, 16, fmt.Sprintf("%s  step %d  return %.1f", name, res.Steps, res.Return), colText)
		g.Image = append(g.Image, c.img)
		g.Delay = append(g.Delay, opt.Delay)
		res.Frames++
	}
	obs := e.Reset(seed)
	frame(obs)
	for {
		a := policy(obs)
		o, r, term, trunc := e.Step(a)
		obs = o
		res.Steps++
		res.Return += r
		res.Terminated, res.Truncated = term, trunc
		end := term || trunc || (opt.MaxSteps > 0 && res.Steps >= opt.MaxSteps)
		if end || res.Steps%opt.Every == 0 {
			frame(obs)
		}
		if end {
			break
		}
	}
	return g, res, nil
}

// The palette: index 0 is the sky.
var palette = color.Palette{
	color.RGBA{215, 215, 255, 255}, // sky
	color.RGBA{255, 255, 255, 255}, // white (clouds, obstacles)
	color.RGBA{102, 153, 76, 255},  // ground
	color.RGBA{76, 255, 76, 255},   // grass edge
	color.RGBA{127, 51, 229, 255},  // hull
	color.RGBA{76, 76, 127, 255},   // hull outline
	color.RGBA{178, 101, 152, 255}, // leg 0
	color.RGBA{128, 51, 77, 255},   // leg 1
	color.RGBA{255, 0, 0, 255},     // lidar
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{230, 51, 0, 255},    // flag
	color.RGBA{153, 153, 153, 255}, // grey
	color.RGBA{40, 40, 40, 255},    // text
	color.RGBA{204, 153, 102, 255}, // cart / pole
	color.RGBA{70, 130, 180, 255},  // blue
	color.RGBA{255, 215, 0, 255},   // yellow
}

const (
	colSky uint8 = iota
	colWhite
	colGround
	colGrass
	colHull
	colHullLine
	colLeg0
	colLeg1
	colLidar
	colBlack
	colFlag
	colGrey
	colText
	colPole
	colBlue
	colYellow
)

type canvas struct {
	img  *image.Paletted
	w, h int
}

func newCanvas(w, h int) *canvas {
	return &canvas{img: image.NewPaletted(image.Rect(0, 0, w, h), palette), w: w, h: h}
}

func (c *canvas) set(x, y int, col uint8) {
	if x >= 0 && y >= 0 && x < c.w && y < c.h {
		c.img.Pix[y*c.img.Stride+x] = col
	}
}

func (c *canvas) rect(x0, y0, x1, y1 int, col uint8) {
	for y := max(y0, 0); y < min(y1, c.h); y++ {
		for x := max(x0, 0); x < min(x1, c.w); x++ {
			c.img.Pix[y*c.img.Stride+x] = col
		}
	}
}

// fill fills the polygon pts (pixel coordinates) by the even-odd rule at pixel centres.
func (c *canvas) fill(pts [][2]float64, col uint8) {
	if len(pts) < 3 {
		return
	}
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		ylo, yhi = math.Min(ylo, p[1]), math.Max(yhi, p[1])
	}
	var xs [64]float64
	for y := max(int(math.Floor(ylo)), 0); y <= min(int(math.Ceil(yhi)), c.h-1); y++ {
		yc := float64(y) + 0.5
		n := 0
		for i := range pts {
			a, b := pts[i], pts[(i+1)%len(pts)]
			if (a[1] <= yc) != (b[1] <= yc) && n < len(xs) {
				xs[n] = a[0] + (yc-a[1])/(b[1]-a[1])*(b[0]-a[0])
				n++
			}
		}
		for i := 1; i < n; i++ { // insertion sort of the few crossings
			for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
				xs[j], xs[j-1] = xs[j-1], xs[j]
			}
		}
		for i := 0; i+1 < n; i += 2 {
			for x := max(int(math.Ceil(xs[i]-0.5)), 0); x <= min(int(math.Floor(xs[i+1]-0.5)), c.w-1); x++ {
				c.img.Pix[y*c.img.Stride+x] = col
			}
		}
	}
}

// line draws a segment of the given width (pixels).
func (c *canvas) line(x0, y0, x1, y1, width float64, col uint8) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))) + 1
	r := int(width / 2)
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(n)
		x, y := int(math.Round(x0+t*(x1-x0))), int(math.Round(y0+t*(y1-y0)))
		for dy := -r; dy <= r; dy++ {
			for dx := -r; dx <= r; dx++ {
				c.set(x+dx, y+dy, col)
			}
		}
	}
}

func (c *canvas) outline(pts [][2]float64, col uint8) {
	for i := range pts {
		a, b := pts[i], pts[(i+1)%len(pts)]
		c.line(a[0], a[1], b[0], b[1], 1, col)
	}
}

func (c *canvas) text(x, y int, s string, col uint8) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(palette[col]), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// drawer draws one frame of an environment.
type drawer interface {
	draw(c *canvas, obs []float64)
}
