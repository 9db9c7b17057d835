package ppo

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/rl/nn"
)

// Precision selects the floating-point type of the networks during training.
type Precision string

const (
	// Float32 trains single-precision copies of the actor and critic (nn.MLP32:
	// weights, activations, gradients and Adam moments in float32, twice the
	// lanes per vector instruction); returns, advantages, losses, the
	// Gaussian log standard deviations and the normalisation statistics stay
	// float64. The Policy's float64 networks receive the float32 parameters
	// (exactly) after every update. It is the default, except with gSDE (see
	// Options.Precision). It needs AVX2 and FMA (or AVX-512) to be fast;
	// without them nn.MLP32 runs plain Go, slower than Float64.
	Float32 Precision = "float32"
	// Float64 trains the Policy's float64 networks directly.
	Float64 Precision = "float64"
)

// ParsePrecision returns the Precision named s; "" means Float32.
func ParsePrecision(s string) (Precision, error) {
	switch Precision(s) {
	case "", Float32:
		return Float32, nil
	case Float64:
		return Float64, nil
	}
	return "", fmt.Errorf("precision %q: want float32 or float64", s)
}

// sdePrecision is ParsePrecision for a trainer whose Config.UseSDE is
// useSDE: gSDE needs the actor's float64 latent features, so with it the
// default ("") is Float64 and an explicit Float32 is refused.
func sdePrecision(s Precision, useSDE bool) (Precision, error) {
	if useSDE {
		switch s {
		case "":
			return Float64, nil
		case Float32:
			return "", fmt.Errorf("precision %q with use_sde: gSDE trains float64 networks only; use precision float64 (or leave it unset)", s)
		}
	}
	return ParsePrecision(string(s))
}

// Workspaces of a trainNet: one per purpose, so that the rollout, the
// bootstrap values of truncated episodes and the minibatch update never
// overwrite each other's activations.
const (
	wsRollout   = iota // NEnvs rows: the rollout's action or value
	wsTerminal         // 1 row: the value of a truncated episode's last observation
	wsMinibatch        // BatchSize rows: the update (Backward follows its Forward)
	numWS
)

// trainNet is the actor or the critic as the trainer trains it: its
// parameters (the Policy's float64 network or a float32 copy), workspaces,
// gradient and Adam state. A trainNet is used by one goroutine at a time.
type trainNet interface {
	// forward evaluates the network on the n rows of x in workspace ws.
	forward(ws int, x []float64, n int) []float64
	// values writes the outputs for the rows of x (one output each) to dst,
	// perStep rows at a time (the rollout's rows per step).
	values(dst, x []float64, perStep int)
	// backward adds the gradient of dOut for the last wsMinibatch forward to the gradient.
	backward(dOut []float64)
	// clearGrad zeroes the gradient.
	clearGrad()
	// sumSquares returns s plus the sum of the squared gradient entries, added in order after s.
	sumSquares(s float64) float64
	// step scales the gradient by scale (the clipping factor, 1: unclipped) and takes an Adam step at rate lr.
	step(lr, scale float64)
	// sync makes the Policy's network hold the trained parameters; load does the reverse.
	sync()
	load()
}

// net64 trains the Policy's float64 network in place.
type net64 struct {
	m    *nn.MLP
	ws   [numWS]*nn.Workspace
	g    []float64
	adam *nn.Adam
}

func newNet64(m *nn.MLP, cfg Config, n, B int) *net64 {
	t := &net64{m: m, g: make([]float64, len(m.Params)), adam: nn.NewAdam(len(m.Params), cfg.LearningRate, cfg.AdamEps)}
	t.ws[wsRollout], t.ws[wsTerminal], t.ws[wsMinibatch] = m.NewWorkspace(n), m.NewWorkspace(1), m.NewWorkspace(B)
	return t
}

func (t *net64) forward(ws int, x []float64, n int) []float64 { return t.m.Forward(t.ws[ws], x, n) }

// values forwards one rollout step at a time: MLP's results depend on the
// batch size (its kernels differ), so the batches stay those of the rollout.
func (t *net64) values(dst, x []float64, perStep int) {
	d := t.m.In()
	for r := 0; r < len(dst); r += perStep {
		copy(dst[r:r+perStep], t.forward(wsRollout, x[r*d:(r+perStep)*d], perStep))
	}
}

func (t *net64) backward(dOut []float64) { t.m.Backward(t.ws[wsMinibatch], dOut, t.g, nil) }
func (t *net64) clearGrad()              { clear(t.g) }

func (t *net64) sumSquares(s float64) float64 {
	for _, v := range t.g {
		s += v * v
	}
	return s
}

func (t *net64) step(lr, scale float64) {
	if scale != 1 {
		scaleGrad(t.g, scale)
	}
	t.adam.LR = lr
	t.adam.Step(t.m.Params, t.g)
}

func (t *net64) sync() {}
func (t *net64) load() {}

// net32 trains a float32 copy of a Policy network.
type net32 struct {
	m    *nn.MLP32
	dst  *nn.MLP // the Policy's network
	ws   [numWS]*nn.Workspace32
	val  *nn.Workspace32 // values: valBatch rows
	g    []float32
	adam *nn.Adam32
}

// valBatch is the number of rollout rows whose values are computed in one
// float32 forward pass (rows do not influence each other's bits, see nn.MLP32).
const valBatch = 64

// newNet32 returns a float32 copy of m; m receives the rounded parameters.
func newNet32(m *nn.MLP, cfg Config, n, B int) *net32 {
	t := &net32{m: nn.FromMLP(m), dst: m}
	t.m.CopyTo(m)
	t.ws[wsRollout], t.ws[wsTerminal], t.ws[wsMinibatch] = t.m.NewWorkspace(n), t.m.NewWorkspace(1), t.m.NewWorkspace(B)
	t.val = t.m.NewWorkspace(valBatch)
	t.g = make([]float32, len(t.m.Params))
	t.adam = nn.NewAdam32(len(t.g), cfg.LearningRate, cfg.AdamEps)
	return t
}

func (t *net32) forward(ws int, x []float64, n int) []float64 { return t.m.Forward(t.ws[ws], x, n) }

func (t *net32) values(dst, x []float64, perStep int) {
	d := t.m.In()
	for r := 0; r < len(dst); r += valBatch {
		k := min(valBatch, len(dst)-r)
		copy(dst[r:r+k], t.m.Forward(t.val, x[r*d:(r+k)*d], k))
	}
}

func (t *net32) backward(dOut []float64)      { t.m.Backward(t.ws[wsMinibatch], dOut, t.g) }
func (t *net32) clearGrad()                   { clear(t.g) }
func (t *net32) sumSquares(s float64) float64 { return s + nn.SumSquares32(t.g) }

func (t *net32) step(lr, scale float64) {
	t.adam.LR = lr
	t.adam.Step(t.m.Params, t.g, scale)
}

func (t *net32) sync() { t.m.CopyTo(t.dst) }
func (t *net32) load() { copy(t.m.Params, nn.FromMLP(t.dst).Params) }

// newTrainNet returns the trainNet of m for the given precision.
func newTrainNet(prec Precision, m *nn.MLP, cfg Config, n, B int) trainNet {
	if prec == Float32 {
		return newNet32(m, cfg, n, B)
	}
	return newNet64(m, cfg, n, B)
}
