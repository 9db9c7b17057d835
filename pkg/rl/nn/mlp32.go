package nn

import (
	"fmt"
	"math"
)

// MLP32 is the single-precision training copy of an MLP: the weights, the
// activations, the gradients (and, with Adam32, the optimiser state) are
// float32, which doubles the lanes per vector instruction. Inputs and outputs
// cross the boundary as float64, so callers keep their float64 returns,
// advantages and normalisation statistics.
//
// Params stores, layer after layer, Wᵀ_l (Sizes[l] rows by Sizes[l+1]
// columns, row-major: the transpose of MLP's torch layout, so that the
// forward product X·Wᵀ streams contiguous rows of it) followed by b_l.
// FromMLP and CopyTo convert to and from MLP's layout.
//
// On amd64 CPUs with AVX-512 the products, the fused bias+tanh, the tanh
// derivative and Adam run in assembly (kernels32_amd64.s); elsewhere in the
// plain Go transcriptions of those kernels (kernels32.go). Results are
// deterministic for a given code path: every output entry is computed by the
// same sequence of operations whatever the batch size or the row's position in
// it, so a row's value does not depend on how rows are grouped into batches.
type MLP32 struct {
	// Sizes lists the layer widths, input first and output last.
	Sizes []int
	// Acts holds the activation after each layer.
	Acts []Activation
	// Params holds Wᵀ_l and b_l of every layer, as described above.
	Params []float32

	offsets []int
}

// NewMLP32 returns a zero MLP32 with the shape of m.
func NewMLP32(sizes []int, acts []Activation) (*MLP32, error) {
	if len(sizes) < 2 || len(acts) != len(sizes)-1 {
		return nil, fmt.Errorf("nn: %d sizes and %d activations, need ≥ 2 sizes and one activation per layer", len(sizes), len(acts))
	}
	m := &MLP32{Sizes: append([]int(nil), sizes...), Acts: append([]Activation(nil), acts...)}
	n := 0
	for l := 0; l+1 < len(sizes); l++ {
		if sizes[l] <= 0 || sizes[l+1] <= 0 {
			return nil, fmt.Errorf("nn: layer size %d is not positive", min(sizes[l], sizes[l+1]))
		}
		m.offsets = append(m.offsets, n)
		n += sizes[l+1]*sizes[l] + sizes[l+1]
	}
	m.Params = make([]float32, n)
	return m, nil
}

// FromMLP returns a float32 copy of m (each parameter rounded to nearest).
func FromMLP(m *MLP) *MLP32 {
	c, err := NewMLP32(m.Sizes, m.Acts)
	if err != nil {
		panic(err) // m was validated when built
	}
	for l := 0; l < m.NumLayers(); l++ {
		in, out := m.Sizes[l], m.Sizes[l+1]
		w, b := m.Layer(m.Params, l)
		wt, b32 := c.Layer(c.Params, l)
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				wt[i*out+o] = float32(w[o*in+i])
			}
			b32[o] = float32(b[o])
		}
	}
	return c
}

// CopyTo writes the parameters of m32 into m (same shape), converting to
// float64 and back to MLP's layout; the values are exactly representable.
func (m *MLP32) CopyTo(dst *MLP) {
	for l := 0; l < m.NumLayers(); l++ {
		in, out := m.Sizes[l], m.Sizes[l+1]
		w, b := dst.Layer(dst.Params, l)
		wt, b32 := m.Layer(m.Params, l)
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				w[o*in+i] = float64(wt[i*out+o])
			}
			b[o] = float64(b32[o])
		}
	}
}

// NumLayers returns the number of dense layers.
func (m *MLP32) NumLayers() int { return len(m.Sizes) - 1 }

// In returns the input width.
func (m *MLP32) In() int { return m.Sizes[0] }

// Out returns the output width.
func (m *MLP32) Out() int { return m.Sizes[len(m.Sizes)-1] }

// Layer returns views of Wᵀ_l (Sizes[l] × Sizes[l+1], row-major) and b_l
// inside p, which has the layout of Params (Params or a gradient).
func (m *MLP32) Layer(p []float32, l int) (wt, b []float32) {
	in, out := m.Sizes[l], m.Sizes[l+1]
	o := m.offsets[l]
	return p[o : o+out*in], p[o+out*in : o+out*in+out]
}

// Workspace32 holds the activations of one batched forward pass of an MLP32
// and the scratch of its backward pass. It belongs to one MLP32 shape and
// one goroutine at a time.
type Workspace32 struct {
	maxBatch int
	n        int
	in       []float32   // the last input, converted
	acts     [][]float32 // acts[l]: output of layer l (maxBatch × Sizes[l+1])
	w        [][]float32 // w[l]: W_l in out × in layout for dX = D·W
	delta    [2][]float32
	ones     []float32 // maxBatch ones: bias gradients as 1ᵀ·D
	out      []float64 // the last output, converted
}

// NewWorkspace returns a Workspace32 for batches of at most maxBatch rows.
func (m *MLP32) NewWorkspace(maxBatch int) *Workspace32 {
	ws := &Workspace32{maxBatch: maxBatch}
	ws.in = make([]float32, maxBatch*m.In())
	widest := 0
	for l := 0; l < m.NumLayers(); l++ {
		ws.acts = append(ws.acts, make([]float32, maxBatch*m.Sizes[l+1]))
		ws.w = append(ws.w, make([]float32, m.Sizes[l]*m.Sizes[l+1]))
	}
	for _, s := range m.Sizes {
		widest = max(widest, s)
	}
	ws.delta[0] = make([]float32, maxBatch*widest)
	ws.delta[1] = make([]float32, maxBatch*widest)
	ws.ones = make([]float32, maxBatch)
	for i := range ws.ones {
		ws.ones[i] = 1
	}
	ws.out = make([]float64, maxBatch*m.Out())
	return ws
}

// Forward evaluates the network on the n rows of x (n × In, row-major,
// rounded to float32) and returns a view of the n × Out outputs, converted
// to float64 and held in ws until it is reused.
func (m *MLP32) Forward(ws *Workspace32, x []float64, n int) []float64 {
	if n > ws.maxBatch || len(x) < n*m.In() {
		panic("nn: MLP32.Forward: batch larger than workspace or input too short")
	}
	in := ws.in[:n*m.In()]
	for i, v := range x[:len(in)] {
		in[i] = float32(v)
	}
	y := m.forward32(ws, n)
	out := ws.out[:len(y)]
	for i, v := range y {
		out[i] = float64(v)
	}
	return out
}

// forward32 runs the layers on ws.in and returns the float32 output.
func (m *MLP32) forward32(ws *Workspace32, n int) []float32 {
	ws.n = n
	cur := ws.in[:n*m.In()]
	for l := 0; l < m.NumLayers(); l++ {
		in, out := m.Sizes[l], m.Sizes[l+1]
		wt, b := m.Layer(m.Params, l)
		y := ws.acts[l][:n*out]
		// y = x·Wᵀ, then the bias and the activation in one pass.
		sgemm(n, out, in, cur, in, 1, wt, out, y, out, false)
		switch m.Acts[l] {
		case Tanh:
			biasTanh32(y, b, n, out)
		case ReLU:
			for i := 0; i < n; i++ {
				row := y[i*out : (i+1)*out]
				for j, v := range row {
					v += b[j]
					row[j] = max(v, 0)
				}
			}
		default:
			biasAdd32(y, b, n, out)
		}
		cur = y
	}
	return cur
}

// Backward back-propagates dOut (n × Out, the derivative of a scalar loss
// with respect to the outputs of the last Forward on ws, rounded to float32)
// and adds the parameter gradient to grad (laid out like Params). The input
// derivative is not formed.
func (m *MLP32) Backward(ws *Workspace32, dOut []float64, grad []float32) {
	n := ws.n
	if len(grad) != len(m.Params) || len(dOut) < n*m.Out() {
		panic("nn: MLP32.Backward: gradient or dOut has wrong length")
	}
	d := ws.delta[0][:n*m.Out()]
	for i, v := range dOut[:len(d)] {
		d[i] = float32(v)
	}
	k := 0
	for l := m.NumLayers() - 1; l >= 0; l-- {
		in, out := m.Sizes[l], m.Sizes[l+1]
		y := ws.acts[l][:n*out]
		switch m.Acts[l] {
		case Tanh:
			tanhGrad32(d, y)
		case ReLU:
			for i, v := range y {
				if v <= 0 {
					d[i] = 0
				}
			}
		}
		var x []float32
		if l > 0 {
			x = ws.acts[l-1][:n*in]
		} else {
			x = ws.in[:n*in]
		}
		gwt, gb := m.Layer(grad, l)
		// dWᵀ += xᵀ·d (in × out), db += 1ᵀ·d. For a narrow output layer,
		// form dW = dᵀ·x (out × in: long rows for the kernel) and add it
		// transposed; every entry is the same sum either way.
		if out < 16 && in >= 16 {
			dw := ws.w[l][:out*in]
			sgemm(out, in, n, d, 1, out, x, in, dw, in, false)
			for o := 0; o < out; o++ {
				for i, v := range dw[o*in : (o+1)*in] {
					gwt[i*out+o] += v
				}
			}
		} else {
			sgemm(in, out, n, x, 1, in, d, out, gwt, out, true)
		}
		sgemm(1, out, n, ws.ones, 0, 1, d, out, gb, out, true)
		if l == 0 {
			break
		}
		// dx = d·W, with W (out × in) transposed from Params.
		wt, _ := m.Layer(m.Params, l)
		w := ws.w[l]
		transpose32(w, wt, in, out)
		k ^= 1
		next := ws.delta[k][:n*in]
		sgemm(n, in, out, d, out, 1, w, in, next, in, false)
		d = next
	}
}

// Adam32 is Adam (as Adam, with torch.optim.Adam's bias correction) over a
// float32 parameter vector with float32 moments. The bias corrections are
// computed in float64 and rounded once.
type Adam32 struct {
	// LR is the step size.
	LR float64
	// Beta1, Beta2 and Eps are as in Adam (zero: 0.9, 0.999, 1e-8).
	Beta1, Beta2, Eps float64

	m, v []float32
	t    int
}

// NewAdam32 returns an Adam32 for n parameters (lr zero means 3e-4).
func NewAdam32(n int, lr, eps float64) *Adam32 {
	if lr == 0 {
		lr = 3e-4
	}
	return &Adam32{LR: lr, Eps: eps, m: make([]float32, n), v: make([]float32, n)}
}

// Steps returns the number of updates applied so far.
func (a *Adam32) Steps() int { return a.t }

// Step updates params in place by one Adam step along scale·grad (scale is
// the gradient-clipping factor; 1 leaves grad as it is). grad is not modified.
func (a *Adam32) Step(params, grad []float32, scale float64) {
	if len(params) != len(a.m) || len(grad) != len(a.m) {
		panic("nn: Adam32.Step: length mismatch")
	}
	b1, b2, eps := a.Beta1, a.Beta2, a.Eps
	if b1 == 0 {
		b1 = 0.9
	}
	if b2 == 0 {
		b2 = 0.999
	}
	if eps == 0 {
		eps = 1e-8
	}
	a.t++
	bc1 := 1 - math.Pow(b1, float64(a.t))
	bc2 := 1 - math.Pow(b2, float64(a.t))
	k := [8]float32{float32(b1), float32(1 - b1), float32(b2), float32(1 - b2),
		float32(a.LR / bc1), float32(1 / math.Sqrt(bc2)), float32(eps), float32(scale)}
	adam32(params, grad, a.m, a.v, &k)
}

// SumSquares32 returns Σ g_i² of the float32 vector g, accumulated in float64
// (in a fixed order: 32 interleaved partial sums, then a fixed tree).
func SumSquares32(g []float32) float64 {
	var p [32]float64
	n := len(g) &^ 31
	sumSq32(g[:n], &p)
	// Fixed reduction tree: pairwise halving.
	for w := 16; w >= 1; w /= 2 {
		for i := 0; i < w; i++ {
			p[i] += p[i+w]
		}
	}
	s := p[0]
	for _, v := range g[n:] {
		s += float64(v) * float64(v)
	}
	return s
}
