package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// lossOf evaluates the scalar loss Σ_ij c_ij y_ij of the network outputs y on x,
// whose gradient with respect to y is c.
func lossOf(m *MLP, x []float64, n int, c []float64) float64 {
	ws := m.NewWorkspace(n)
	y := m.Forward(ws, x, n)
	s := 0.0
	for i := range y {
		s += c[i] * y[i]
	}
	return s
}

func TestBackwardMatchesFiniteDifferences(t *testing.T) {
	cases := []struct {
		name   string
		sizes  []int
		hidden Activation
		out    Activation
		n      int
	}{
		{"tanh 4-64-64-2", []int{4, 64, 64, 2}, Tanh, Identity, 7},
		{"tanh 4-64-64-2 batch 20", []int{4, 64, 64, 2}, Tanh, Identity, 20},
		{"tanh 3-16-9-1 batch 33", []int{3, 16, 9, 1}, Tanh, Identity, 33},
		{"tanh 3-5-1", []int{3, 5, 1}, Tanh, Identity, 1},
		{"relu 6-8-8-3 tanh out", []int{6, 8, 8, 3}, ReLU, Tanh, 5},
		{"linear 2-3", []int{2, 3}, Identity, Identity, 4},
	}
	saved := useFMA
	defer func() { useFMA = saved }()
	for _, tc := range cases {
		for _, fma := range []bool{true, false} {
			if fma && !saved {
				continue
			}
			useFMA = fma
			t.Run(fmt.Sprintf("%s fma=%v", tc.name, fma), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 2))
				m := NewMLP(tc.sizes, tc.hidden, tc.out)
				m.InitOrthogonal(rng, math.Sqrt2, 1)
				for i := range m.Params { // nonzero biases too
					m.Params[i] += 0.1 * rng.NormFloat64()
				}
				x := make([]float64, tc.n*m.In())
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				c := make([]float64, tc.n*m.Out())
				for i := range c {
					c[i] = rng.NormFloat64()
				}
				ws := m.NewWorkspace(tc.n)
				m.Forward(ws, x, tc.n)
				grad := make([]float64, len(m.Params))
				dIn := make([]float64, len(x))
				m.Backward(ws, c, grad, dIn)

				const h = 1e-6
				fd := make([]float64, len(m.Params))
				for i := range m.Params {
					p := m.Params[i]
					m.Params[i] = p + h
					lp := lossOf(m, x, tc.n, c)
					m.Params[i] = p - h
					lm := lossOf(m, x, tc.n, c)
					m.Params[i] = p
					fd[i] = (lp - lm) / (2 * h)
				}
				approx.Slices(t, "dLoss/dParams", grad, fd, 1e-6, 1e-5)
				fdx := make([]float64, len(x))
				for i := range x {
					v := x[i]
					x[i] = v + h
					lp := lossOf(m, x, tc.n, c)
					x[i] = v - h
					lm := lossOf(m, x, tc.n, c)
					x[i] = v
					fdx[i] = (lp - lm) / (2 * h)
				}
				approx.Slices(t, "dLoss/dInput", dIn, fdx, 1e-6, 1e-5)
			})
		}
	}
}

func TestBackwardAccumulates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := NewMLP([]int{3, 4, 2}, Tanh, Identity)
	m.InitOrthogonal(rng, 1, 1)
	x := []float64{0.1, -0.2, 0.3, 1, 2, -1}
	c := []float64{1, -1, 0.5, 2}
	ws := m.NewWorkspace(2)
	m.Forward(ws, x, 2)
	g1 := make([]float64, len(m.Params))
	m.Backward(ws, c, g1, nil)
	g2 := append([]float64(nil), g1...)
	m.Backward(ws, c, g2, nil)
	for i := range g1 {
		g1[i] *= 2
	}
	approx.Slices(t, "twice-accumulated gradient", g2, g1, 1e-15, 1e-14)
}

func TestOrthogonal(t *testing.T) {
	for _, sh := range [][2]int{{64, 4}, {4, 64}, {64, 64}, {1, 64}, {2, 64}} {
		rows, cols := sh[0], sh[1]
		rng := rand.New(rand.NewPCG(5, uint64(rows*100+cols)))
		const gain = 1.7
		w := Orthogonal(make([]float64, rows*cols), rows, cols, gain, rng)
		// The smaller Gram matrix must be gain² I.
		if rows <= cols {
			for i := 0; i < rows; i++ {
				for j := 0; j < rows; j++ {
					s := 0.0
					for k := 0; k < cols; k++ {
						s += w[i*cols+k] * w[j*cols+k]
					}
					want := 0.0
					if i == j {
						want = gain * gain
					}
					approx.Equal(t, "row Gram", s, want, 1e-12, 0)
				}
			}
		} else {
			for i := 0; i < cols; i++ {
				for j := 0; j < cols; j++ {
					s := 0.0
					for k := 0; k < rows; k++ {
						s += w[k*cols+i] * w[k*cols+j]
					}
					want := 0.0
					if i == j {
						want = gain * gain
					}
					approx.Equal(t, "column Gram", s, want, 1e-12, 0)
				}
			}
		}
	}
}

func TestAdamMatchesClosedForm(t *testing.T) {
	// After one step torch's Adam moves each parameter by exactly -lr·g/(|g|+eps).
	a := NewAdam(3, 0.01, 1e-8)
	p := []float64{1, 2, 3}
	g := []float64{0.5, -2, 0}
	a.Step(p, g)
	approx.Slices(t, "params after one step", p, []float64{1 - 0.01*0.5/(0.5+1e-8), 2 + 0.01*2/(2+1e-8), 3}, 1e-15, 1e-14)
	// Reference recursion written out independently for 5 more steps.
	m := []float64{0.05, -0.2, 0}
	v := []float64{0.001 * 0.25, 0.001 * 4, 0}
	for step := 2; step <= 6; step++ {
		gs := []float64{0.5 * float64(step), -2, 1}
		want := append([]float64(nil), p...)
		for i := range want {
			m[i] = 0.9*m[i] + 0.1*gs[i]
			v[i] = 0.999*v[i] + 0.001*gs[i]*gs[i]
			mh := m[i] / (1 - math.Pow(0.9, float64(step)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step)))
			want[i] -= 0.01 * mh / (math.Sqrt(vh) + 1e-8) // torch adds eps after bias correction
		}
		a.Step(p, gs)
		approx.Slices(t, "params", p, want, 1e-12, 1e-10)
	}
}

func TestClipGradNorm(t *testing.T) {
	a := []float64{3, 0}
	b := []float64{0, 4}
	n := ClipGradNorm(1, a, b)
	approx.Equal(t, "norm before", n, 5, 0, 1e-15)
	got := math.Sqrt(a[0]*a[0] + b[1]*b[1])
	approx.Equal(t, "norm after", got, 1, 1e-6, 0)
	approx.Equal(t, "direction", a[0]/b[1], 0.75, 0, 1e-14)
	c := []float64{0.1, 0.2}
	ClipGradNorm(1, c)
	approx.Slices(t, "below the limit", c, []float64{0.1, 0.2}, 0, 0)
}

func TestTanhMatchesMath(t *testing.T) {
	for x := -25.0; x <= 25; x += 0.000731 {
		if d := math.Abs(tanh(x) - math.Tanh(x)); d > 2e-15 {
			t.Fatalf("tanh(%g) = %.17g, math.Tanh %.17g", x, tanh(x), math.Tanh(x))
		}
	}
	for _, x := range []float64{0, 1e-300, -1e-10, 0.0199999, -0.02, 0.02000001} {
		approx.Equal(t, "tanh near 0", tanh(x), math.Tanh(x), 0, 1e-14)
	}
}

func TestTanh4(t *testing.T) {
	if !useFMA {
		t.Skip("no AVX2/FMA")
	}
	var xs []float64
	for x := -45.0; x <= 45; x += 0.000377 {
		xs = append(xs, x)
	}
	xs = append(xs, 0, math.Copysign(0, -1), 1e-300, -1e-12, 0.0199999, -0.02, 0.02000001, 19.99, 20, 20.01, 700, -700, math.Inf(1), math.Inf(-1))
	for len(xs)%4 != 0 {
		xs = append(xs, 0.5)
	}
	got := append([]float64(nil), xs...)
	tanh4(got)
	for i, x := range xs {
		want := math.Tanh(x)
		if !approx.Close(got[i], want, 1e-15, 1e-14) {
			t.Fatalf("tanh4(%g) = %.17g, math.Tanh %.17g", x, got[i], want)
		}
	}
	// The AVX-512 version must agree with tanh4 bit for bit.
	if useAVX512 {
		wide := append([]float64(nil), xs[:len(xs)&^15]...)
		tanh16(wide)
		for i, v := range wide {
			if v != got[i] {
				t.Fatalf("tanh16(%g) = %.17g, tanh4 %.17g", xs[i], v, got[i])
			}
		}
	}
	// The two-vector loop and the single-vector tail must agree bit for bit.
	for i := 0; i+4 <= len(xs); i += 4 {
		one := append([]float64(nil), xs[i:i+4]...)
		tanh4(one)
		for j, v := range one {
			if v != got[i+j] {
				t.Fatalf("tanh4(%g): %.17g alone, %.17g in a long slice", xs[i+j], v, got[i+j])
			}
		}
	}
}
