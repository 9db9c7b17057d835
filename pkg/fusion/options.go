package fusion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/ot"
)

// Fusion methods (Options.Method).
const (
	// MethodMean is parameter averaging (FedAvg), the default.
	MethodMean = "mean"
	// MethodBarycentric is the entropic Wasserstein barycenter on the probe.
	MethodBarycentric = "barycentric"
)

// Client weightings (Options.Weighting).
const (
	// WeightingUniform gives every client the weight 1/K, the default.
	WeightingUniform = "uniform"
	// WeightingDemos makes α_i proportional to client i's demonstration count.
	WeightingDemos = "demos"
)

// Options is the one configuration of a fusion: which method, how clients are
// weighted and, for the barycentric method, the solver and the shift/scale of
// the reward ↔ measure maps. A federation task carries it as it is (JSON
// keys below); studies convert their own file keys to it in one place.
//
// Zero values mean: method "mean", weighting "uniform", solver ot.IBP, ε =
// ot.DefaultEps squared lattice spacings, ot's iteration defaults, automatic
// σ (AutoSigma) and Z = Σ α_i Z_i. Solver ot.Paper with MaxIter 50,
// InnerIter 10 and Tol −1 is the paper's fixed schedule.
type Options struct {
	// Method is MethodMean or MethodBarycentric.
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	// Weighting is WeightingUniform or WeightingDemos.
	Weighting string `json:"weighting,omitempty" yaml:"weighting,omitempty"`
	// Solver is the barycenter algorithm (ibp, stabilized, debiased, paper).
	Solver ot.Method `json:"solver,omitempty" yaml:"solver,omitempty"`
	// Eps is the entropic regularization in units of the lattice's squared
	// smallest spacing; 0 means ot.DefaultEps.
	Eps float64 `json:"epsilon,omitempty" yaml:"epsilon,omitempty"`
	// MaxIter caps barycenter iterations; 0 means ot's default (50 for
	// ot.Paper, as in the paper's appendix; 1000 otherwise).
	MaxIter int `json:"max_iter,omitempty" yaml:"max_iter,omitempty"`
	// InnerIter is the number of Sinkhorn iterations per barycenter step for
	// ot.Paper; 0 means ot's default (10, the paper's value).
	InnerIter int `json:"inner_iter,omitempty" yaml:"inner_iter,omitempty"`
	// Tol is ot's stopping tolerance on the marginal error; 0 means ot's
	// default, negative runs exactly MaxIter iterations.
	Tol float64 `json:"tol,omitempty" yaml:"tol,omitempty"`
	// Sigma is the shift σ of T_σ; 0 means AutoSigma over the clients' rewards.
	Sigma float64 `json:"sigma,omitempty" yaml:"sigma,omitempty"`
	// Z is the scale used to map the barycenter back, r̄ = Z p̄ − σ1; 0 means
	// Σ α_i Z_i, the weighted mean of the clients' normalizers (the server
	// does not know Z(r*) of Theorem 1).
	Z float64 `json:"z,omitempty" yaml:"z,omitempty"`
}

// MethodName returns the fusion method with its default applied.
func (o Options) MethodName() string {
	if o.Method == "" {
		return MethodMean
	}
	return o.Method
}

// Validate reports the first option that no fusion can run with, naming its
// JSON key.
func (o Options) Validate() error {
	switch o.Method {
	case "", MethodMean, MethodBarycentric:
	default:
		return fmt.Errorf("fusion.method %q: want %q or %q", o.Method, MethodMean, MethodBarycentric)
	}
	switch o.Weighting {
	case "", WeightingUniform, WeightingDemos:
	default:
		return fmt.Errorf("fusion.weighting %q: want %q or %q", o.Weighting, WeightingUniform, WeightingDemos)
	}
	if o.Solver < ot.IBP || o.Solver > ot.Paper {
		return fmt.Errorf("fusion.solver %d: unknown barycenter method", int(o.Solver))
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"fusion.epsilon", o.Eps}, {"fusion.tol", math.Abs(o.Tol)}, {"fusion.sigma", o.Sigma}, {"fusion.z", o.Z}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s = %v: want a finite non-negative number", f.key, f.v)
		}
	}
	if o.MaxIter < 0 || o.InnerIter < 0 {
		return fmt.Errorf("fusion.max_iter = %d, fusion.inner_iter = %d: want non-negative counts", o.MaxIter, o.InnerIter)
	}
	return nil
}

// DecodeOptions reads Options from JSON (empty means the zero Options),
// refusing unknown keys, and validates them.
func DecodeOptions(b []byte) (Options, error) {
	var o Options
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return Options{}, fmt.Errorf("fusion options: %w", err)
		}
	}
	if err := o.Validate(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// ClientWeights returns the unnormalized weights of the configured weighting
// for clients with the given demonstration counts: nil (uniform) or the
// counts themselves; nil also when no client reports demonstrations. Mean
// and Barycentric normalize them with Weights (ot's barycenter renormalizes
// the α it is given, which can move their last bits).
func (o Options) ClientWeights(demoCounts []int) []float64 {
	if o.Weighting != WeightingDemos {
		return nil
	}
	w := make([]float64, len(demoCounts))
	total := 0.0
	for i, c := range demoCounts {
		w[i] = float64(c)
		total += w[i]
	}
	if total <= 0 {
		return nil
	}
	return w
}

// Output is the outcome of Fuse: the fused θ and, for the barycentric
// method, the solver's diagnostics.
type Output struct {
	// Theta is the fused parameter vector.
	Theta []float64
	// Method is the method that produced it (Options.MethodName()).
	Method string
	// Barycentric is the full barycentric result; nil for the mean.
	Barycentric *Result
}

// Fuse fuses thetas with weights (nil means uniform) by the method of opt:
// Mean, or Barycentric on the probe p.
func Fuse(p Probe, thetas [][]float64, weights []float64, opt Options) (Output, error) {
	return FuseContext(context.Background(), p, thetas, weights, opt)
}

// FuseContext is Fuse that a cancelled ctx stops between barycenter
// iterations, returning an error wrapping ctx's error.
func FuseContext(ctx context.Context, p Probe, thetas [][]float64, weights []float64, opt Options) (Output, error) {
	if err := opt.Validate(); err != nil {
		return Output{}, err
	}
	out := Output{Method: opt.MethodName()}
	if out.Method == MethodMean {
		th, err := Mean(thetas, weights)
		out.Theta = th
		return out, err
	}
	if p.Phi == nil {
		return Output{}, fmt.Errorf("fusion: method %q needs a probe", out.Method)
	}
	res, err := BarycentricContext(ctx, p.Phi, p.Lattice, thetas, weights, opt)
	if err != nil {
		return Output{}, err
	}
	out.Theta, out.Barycentric = res.Theta, &res
	return out, nil
}
