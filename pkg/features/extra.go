package features

import (
	"fmt"
	"math"
)

// Kinds of ExtraFeature.
const (
	ExtraSquare = "square"
	ExtraCos    = "cos"
	ExtraSin    = "sin"
	// ExtraAbs is |u|.
	ExtraAbs = "abs"
	// ExtraLinear is u itself.
	ExtraLinear = "linear"
	// ExtraNorm is the Euclidean norm ‖(u, v)‖ of coordinate Axis and
	// coordinate With, both scaled by Scale (LunarLander's distance to the
	// pad and speed).
	ExtraNorm = "norm"
)

// extraKinds lists the kinds of ExtraFeature.
var extraKinds = []string{ExtraSquare, ExtraCos, ExtraSin, ExtraAbs, ExtraLinear, ExtraNorm}

// ExtraFeature is one analytic feature of coordinate Axis of the point:
// with u = Scale·w(x), where w wraps x into [−Period/2, Period/2) when
// Period > 0, the feature is u² (Kind "square"), cos u ("cos"), sin u
// ("sin"), |u| ("abs"), u ("linear"), or ‖(u, v)‖ ("norm", v = Scale·w of
// coordinate With).
type ExtraFeature struct {
	// Kind is "square", "cos", "sin", "abs", "linear" or "norm".
	Kind string `json:"kind"`
	// Axis is the index of the coordinate in the point (state axes, then action axes).
	Axis int `json:"axis"`
	// With is the second coordinate of a "norm" (> Axis); unused otherwise.
	With int `json:"with,omitempty"`
	// Scale multiplies the (wrapped) coordinate; 0 means 1.
	Scale float64 `json:"scale,omitempty"`
	// Period, when > 0, wraps the coordinate first (angles: 2π).
	Period float64 `json:"period,omitempty"`
}

// value returns the feature at point x and its derivatives along Axis and
// (for a norm) With; |u| and ‖(u, v)‖ take the derivative 0 where they
// have none.
func (e *ExtraFeature) value(x []float64) (v, dv, dw float64) {
	sc := e.Scale
	if sc == 0 {
		sc = 1
	}
	wrap := func(c float64) float64 {
		if e.Period > 0 {
			c -= e.Period * math.Round(c/e.Period)
		}
		return sc * c
	}
	u := wrap(x[e.Axis])
	switch e.Kind {
	case ExtraSquare:
		return u * u, 2 * u * sc, 0
	case ExtraCos:
		return math.Cos(u), -sc * math.Sin(u), 0
	case ExtraAbs:
		d := 0.0
		if u != 0 {
			d = math.Copysign(sc, u)
		}
		return math.Abs(u), d, 0
	case ExtraLinear:
		return u, sc, 0
	case ExtraNorm:
		w := wrap(x[e.With])
		n := math.Hypot(u, w)
		if n == 0 {
			return 0, 0, 0
		}
		return n, sc * u / n, sc * w / n
	default:
		return math.Sin(u), sc * math.Cos(u), 0
	}
}

func (e *ExtraFeature) name(axes []RBFAxis) string {
	coord := func(k int) string {
		n := fmt.Sprintf("x%d", k)
		if k >= 0 && k < len(axes) && axes[k].Name != "" {
			n = axes[k].Name
		}
		if e.Scale != 0 && e.Scale != 1 {
			n = fmt.Sprintf("%g*%s", e.Scale, n)
		}
		return n
	}
	if e.Kind == ExtraNorm {
		return e.Kind + "(" + coord(e.Axis) + ", " + coord(e.With) + ")"
	}
	return e.Kind + "(" + coord(e.Axis) + ")"
}
