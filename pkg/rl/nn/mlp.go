// Package nn holds the small fully connected networks that rl/ppo trains: a
// multilayer perceptron with batched forward and backward passes over
// contiguous row-major float64 slices, orthogonal initialisation, Adam,
// gradient-norm clipping, and Fit: regression of a network on values at
// given inputs (how a fused reward is distilled into a network).
//
// It is hand-written rather than built on an autodiff library because PPO's
// networks are tiny (two hidden layers of 64 units) and the update loop runs
// millions of times: a fixed memory layout and workspaces reused across calls
// keep the hot path free of allocations. Matrix products go to gonum's BLAS,
// or, on amd64 CPUs with AVX2 and FMA, to a 4×8 assembly micro-kernel
// (gemm_amd64.s; 4×16 with AVX-512) with a vectorised tanh (tanh_amd64.s),
// about twice as fast for these sizes. Results are deterministic on a given
// kind of CPU; the FMA and portable paths agree to rounding (about 1e-15
// relative), not bit for bit. On the FMA path, the AVX-512 kernels and the
// kernels without fused multiply-adds (simd_amd64.s: Adam, the tanh
// derivative, bias gradients, narrow products and the dot products that
// replace gonum's) perform the same IEEE operations in the same order as the
// code they replace, so AVX-512 or not changes no bit.
//
// MLP32 and Adam32 are the single-precision training copies PPO uses by
// default (weights, activations, gradients and Adam moments in float32, with
// AVX-512 or AVX2 kernels in kernels32_amd64.s: twice the lanes per instruction, a
// fused bias+tanh, no per-forward transpose); see MLP32.
//
// It deliberately supports only dense layers with elementwise activations; it
// has no convolutions, no automatic differentiation and no GPU support.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Activation is an elementwise nonlinearity applied after a dense layer.
type Activation int

const (
	// Identity leaves its input unchanged.
	Identity Activation = iota
	// Tanh is the hyperbolic tangent.
	Tanh
	// ReLU is max(0, x).
	ReLU
)

// String returns the activation's name as used in checkpoints: "identity", "tanh" or "relu".
func (a Activation) String() string {
	switch a {
	case Identity:
		return "identity"
	case Tanh:
		return "tanh"
	case ReLU:
		return "relu"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// ParseActivation returns the Activation named s ("identity", "tanh" or "relu").
func ParseActivation(s string) (Activation, error) {
	switch s {
	case "identity", "linear", "":
		return Identity, nil
	case "tanh":
		return Tanh, nil
	case "relu":
		return ReLU, nil
	}
	return 0, fmt.Errorf("unknown activation %q (want identity, tanh or relu)", s)
}

// MLP is a multilayer perceptron. Layer l maps Sizes[l] inputs to Sizes[l+1]
// outputs as y = act_l(W_l x + b_l).
//
// Params stores, layer after layer, the weight matrix W_l (Sizes[l+1] rows by
// Sizes[l] columns, row-major, the layout of torch.nn.Linear.weight) followed
// by the bias b_l (Sizes[l+1] entries).
type MLP struct {
	// Sizes lists the layer widths, input first and output last.
	Sizes []int
	// Acts holds the activation after each layer; len(Acts) == len(Sizes)-1.
	Acts []Activation
	// Params holds all weights and biases in the layout described above.
	Params []float64

	offsets []int // offsets[l] is the start of W_l in Params
}

// NewMLP returns an MLP with the given layer widths whose hidden layers use
// hidden and whose output layer uses out; all parameters are zero.
func NewMLP(sizes []int, hidden, out Activation) *MLP {
	if len(sizes) < 2 {
		panic("nn: an MLP needs at least an input and an output size")
	}
	acts := make([]Activation, len(sizes)-1)
	for i := range acts {
		acts[i] = hidden
	}
	acts[len(acts)-1] = out
	m, err := NewMLPActs(sizes, acts)
	if err != nil {
		panic(err)
	}
	return m
}

// NewMLPActs returns an MLP with the given widths and per-layer activations; all parameters are zero.
func NewMLPActs(sizes []int, acts []Activation) (*MLP, error) {
	if len(sizes) < 2 {
		return nil, fmt.Errorf("nn: %d layer sizes, need at least 2", len(sizes))
	}
	if len(acts) != len(sizes)-1 {
		return nil, fmt.Errorf("nn: %d activations for %d layers", len(acts), len(sizes)-1)
	}
	m := &MLP{Sizes: append([]int(nil), sizes...), Acts: append([]Activation(nil), acts...)}
	n := 0
	for l := 0; l+1 < len(sizes); l++ {
		if sizes[l] <= 0 || sizes[l+1] <= 0 {
			return nil, fmt.Errorf("nn: layer size %d is not positive", min(sizes[l], sizes[l+1]))
		}
		m.offsets = append(m.offsets, n)
		n += sizes[l+1]*sizes[l] + sizes[l+1]
	}
	m.Params = make([]float64, n)
	return m, nil
}

// NumLayers returns the number of dense layers.
func (m *MLP) NumLayers() int { return len(m.Sizes) - 1 }

// In returns the input width.
func (m *MLP) In() int { return m.Sizes[0] }

// Out returns the output width.
func (m *MLP) Out() int { return m.Sizes[len(m.Sizes)-1] }

// Layer returns views of the weight matrix (row-major, out×in) and bias of layer l inside p,
// which has the layout of Params (p may be Params or a gradient buffer).
func (m *MLP) Layer(p []float64, l int) (w, b []float64) {
	in, out := m.Sizes[l], m.Sizes[l+1]
	o := m.offsets[l]
	return p[o : o+out*in], p[o+out*in : o+out*in+out]
}

// Clone returns a deep copy of m.
func (m *MLP) Clone() *MLP {
	c, _ := NewMLPActs(m.Sizes, m.Acts)
	copy(c.Params, m.Params)
	return c
}

// InitOrthogonal sets every weight matrix to a scaled random orthogonal matrix
// (torch.nn.init.orthogonal_, as stable-baselines3 does) and every bias to zero.
// Hidden layers use gain hiddenGain, the output layer outGain.
func (m *MLP) InitOrthogonal(rng *rand.Rand, hiddenGain, outGain float64) {
	for l := 0; l < m.NumLayers(); l++ {
		w, b := m.Layer(m.Params, l)
		g := hiddenGain
		if l == m.NumLayers()-1 {
			g = outGain
		}
		Orthogonal(w, m.Sizes[l+1], m.Sizes[l], g, rng)
		for i := range b {
			b[i] = 0
		}
	}
}

// Orthogonal fills dst (rows×cols, row-major) with gain times a random matrix
// with orthonormal rows (rows ≤ cols) or columns (rows > cols), drawn as the Q
// factor of a Gaussian matrix with the signs of R's diagonal made positive.
func Orthogonal(dst []float64, rows, cols int, gain float64, rng *rand.Rand) []float64 {
	if len(dst) != rows*cols {
		panic("nn: Orthogonal: dst has wrong length")
	}
	// Work on a tall matrix (r ≥ c), transposing at the end if needed.
	r, c := rows, cols
	if r < c {
		r, c = c, r
	}
	a := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s := 1.0
			if rr.At(j, j) < 0 {
				s = -1
			}
			v := gain * s * q.At(i, j)
			if rows >= cols {
				dst[i*cols+j] = v
			} else {
				dst[j*cols+i] = v
			}
		}
	}
	return dst
}

// Workspace holds the activations of one batched forward pass and the
// scratch for its backward pass, so that neither allocates. A Workspace
// belongs to one MLP shape and one goroutine at a time.
type Workspace struct {
	maxBatch int
	in       []float64   // copy-free view of the last input
	acts     [][]float64 // acts[l] is the output of layer l (maxBatch × Sizes[l+1])
	wt       [][]float64 // wt[l] holds W_lᵀ (Sizes[l] × Sizes[l+1]) for the FMA kernel
	delta    [2][]float64
	n        int
}

// NewWorkspace returns a Workspace for batches of at most maxBatch rows.
func (m *MLP) NewWorkspace(maxBatch int) *Workspace {
	ws := &Workspace{maxBatch: maxBatch}
	widest := 0
	for l := 0; l < m.NumLayers(); l++ {
		ws.acts = append(ws.acts, make([]float64, maxBatch*m.Sizes[l+1]))
		ws.wt = append(ws.wt, make([]float64, m.Sizes[l]*m.Sizes[l+1]))
	}
	for _, s := range m.Sizes {
		widest = max(widest, s)
	}
	ws.delta[0] = make([]float64, maxBatch*widest)
	ws.delta[1] = make([]float64, maxBatch*widest)
	return ws
}

// Output returns a view of layer l's output (after its activation) in the
// last Forward: n rows of Sizes[l+1] values, valid until ws is reused.
func (ws *Workspace) Output(m *MLP, l int) []float64 { return ws.acts[l][:ws.n*m.Sizes[l+1]] }

// Forward evaluates the network on the n rows of x (n × In, row-major) and
// returns a view of the n × Out outputs held in ws, valid until ws is reused.
func (m *MLP) Forward(ws *Workspace, x []float64, n int) []float64 {
	if n > ws.maxBatch || len(x) < n*m.In() {
		panic("nn: Forward: batch larger than workspace or input too short")
	}
	ws.in = x[:n*m.In()]
	ws.n = n
	cur := ws.in
	for l := 0; l < m.NumLayers(); l++ {
		in, out := m.Sizes[l], m.Sizes[l+1]
		w, b := m.Layer(m.Params, l)
		y := ws.acts[l][:n*out]
		for i := 0; i < n; i++ {
			copy(y[i*out:(i+1)*out], b)
		}
		// y = x Wᵀ + b
		if useFMA && n >= 16 && out >= 8 {
			wt := transpose(ws.wt[l][:in*out], w, out, in)
			gemmAcc(n, out, in, cur, in, 1, wt, out, y, out)
		} else if in <= smallIn {
			for i := 0; i < n; i++ {
				xi := cur[i*in : (i+1)*in]
				yi := y[i*out : (i+1)*out]
				for o := range yi {
					wo := w[o*in : (o+1)*in]
					s := yi[o]
					for k, v := range xi {
						s += v * wo[k]
					}
					yi[o] = s
				}
			}
		} else if useFMA {
			gemmNT(n, out, in, cur, in, w, in, y, out) // = the Dgemm below, faster
		} else {
			blas64.Implementation().Dgemm(blas.NoTrans, blas.Trans, n, out, in, 1, cur, in, w, in, 1, y, out)
		}
		applyAct(m.Acts[l], y)
		cur = y
	}
	return cur
}

func applyAct(a Activation, y []float64) {
	switch a {
	case Tanh:
		i := 0
		if useFMA && useAVX512 {
			i = len(y) &^ 15
			tanh16(y[:i])
		}
		if useFMA {
			j := len(y) &^ 3
			tanh4(y[i:j])
			i = j
		}
		for ; i < len(y); i++ {
			y[i] = tanh(y[i])
		}
	case ReLU:
		for i, v := range y {
			if v < 0 {
				y[i] = 0
			}
		}
	}
}

// tanh is the hyperbolic tangent through the assembly exp: about twice as
// fast as math.Tanh, with absolute error below 1e-15.
func tanh(x float64) float64 {
	if x > 20 {
		return 1
	}
	if x < -20 {
		return -1
	}
	if x > -0.02 && x < 0.02 { // avoid cancellation in e-1 near 0: odd Taylor series
		x2 := x * x
		return x * (1 - x2*(1.0/3-x2*(2.0/15-x2*17.0/315)))
	}
	e := math.Exp(2 * x)
	return (e - 1) / (e + 1)
}

// transpose writes the transpose of w (rows×cols, row-major) to dst and
// returns it, in 4×4 blocks so that neither reads nor writes stride far.
func transpose(dst, w []float64, rows, cols int) []float64 {
	r4, c4 := rows&^3, cols&^3
	for i := 0; i < r4; i += 4 {
		w0 := w[i*cols : (i+1)*cols]
		w1 := w[(i+1)*cols : (i+2)*cols]
		w2 := w[(i+2)*cols : (i+3)*cols]
		w3 := w[(i+3)*cols : (i+4)*cols]
		for k := 0; k < c4; k += 4 {
			for kk := k; kk < k+4; kk++ {
				d := dst[kk*rows+i : kk*rows+i+4]
				d[0], d[1], d[2], d[3] = w0[kk], w1[kk], w2[kk], w3[kk]
			}
		}
		for k := c4; k < cols; k++ {
			d := dst[k*rows+i : k*rows+i+4]
			d[0], d[1], d[2], d[3] = w0[k], w1[k], w2[k], w3[k]
		}
	}
	for i := r4; i < rows; i++ {
		for k, v := range w[i*cols : (i+1)*cols] {
			dst[k*rows+i] = v
		}
	}
	return dst
}

// smallIn is the input width up to which dense layers use plain loops
// instead of BLAS, whose per-call overhead dominates for short rows.
const smallIn = 8

// Backward back-propagates dOut (n × Out, the derivative of a scalar loss
// with respect to the outputs of the last Forward on ws) and adds the
// parameter gradient to grad (laid out like Params). If dIn is not nil it
// receives the derivative with respect to the inputs (n × In). dOut is not
// modified.
func (m *MLP) Backward(ws *Workspace, dOut []float64, grad, dIn []float64) {
	n := ws.n
	if len(grad) != len(m.Params) || len(dOut) < n*m.Out() {
		panic("nn: Backward: gradient or dOut has wrong length")
	}
	impl := blas64.Implementation()
	L := m.NumLayers()
	d := ws.delta[0][:n*m.Out()]
	copy(d, dOut[:n*m.Out()])
	k := 0
	for l := L - 1; l >= 0; l-- {
		in, out := m.Sizes[l], m.Sizes[l+1]
		y := ws.acts[l][:n*out]
		// Derivative through the activation, in place on d.
		switch m.Acts[l] {
		case Tanh:
			i0 := 0
			if useFMA {
				i0 = len(y) &^ 3
				if i0 > 0 {
					tanhGrad(i0, &d[0], &y[0])
				}
			}
			for i := i0; i < len(y); i++ {
				v := y[i]
				d[i] *= 1 - float64(v*v) // unfused, as tanhGrad
			}
		case ReLU:
			for i, v := range y {
				if v <= 0 {
					d[i] = 0
				}
			}
		}
		x := ws.in
		if l > 0 {
			x = ws.acts[l-1][:n*in]
		}
		gw, gb := m.Layer(grad, l)
		// dW += dᵀ x ; db += Σ_rows d
		if useFMA && out >= 4 && in >= 8 {
			gemmAcc(out, in, n, d, 1, out, x, in, gw, in)
		} else if useFMA && out >= 8 {
			// Narrow input: form dWᵀ = xᵀ d (in × out, wide rows for the kernel) and add it transposed.
			wt := ws.wt[l][:in*out]
			clear(wt)
			gemmAcc(in, out, n, x, 1, in, d, out, wt, out)
			for o := 0; o < out; o++ {
				g := gw[o*in : (o+1)*in]
				for k := range g {
					g[k] += wt[k*out+o]
				}
			}
		} else if in <= smallIn {
			for i := 0; i < n; i++ {
				xi := x[i*in : (i+1)*in]
				for o, dv := range d[i*out : (i+1)*out] {
					g := gw[o*in : (o+1)*in]
					for k, v := range xi {
						g[k] += dv * v
					}
				}
			}
		} else {
			impl.Dgemm(blas.Trans, blas.NoTrans, out, in, n, 1, d, out, x, in, 1, gw, in)
		}
		// db += Σ_rows d, each entry summed over the rows in order.
		j0 := 0
		if useFMA && n > 0 {
			// 1·d is exact, so axpyRows sums exactly as the loop below.
			j0 = out &^ 3
			if j0 > 0 {
				one := 1.0
				axpyRows(n, &one, 0, &d[0], out, &gb[0], j0)
			}
		}
		for i := 0; i < n; i++ {
			row := d[i*out+j0 : (i+1)*out]
			for j, v := range row {
				gb[j0+j] += v
			}
		}
		if l == 0 && dIn == nil {
			break
		}
		w, _ := m.Layer(m.Params, l)
		var next []float64
		if l == 0 {
			next = dIn[:n*in]
		} else {
			k ^= 1
			next = ws.delta[k][:n*in]
		}
		// dx = d W
		if useFMA && n >= 4 && in >= 8 {
			clear(next)
			gemmAcc(n, in, out, d, out, 1, w, in, next, in)
		} else {
			impl.Dgemm(blas.NoTrans, blas.NoTrans, n, in, out, 1, d, out, w, in, 0, next, in)
		}
		d = next
	}
}
