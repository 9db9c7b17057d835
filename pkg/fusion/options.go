package fusion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/fedirl/fedirl/pkg/ot"
)

// Fusion methods (Options.Method): the registry's names, listed in order by
// Methods.
const (
	// MethodMean is parameter averaging (FedAvg), the default.
	MethodMean = "mean"
	// MethodNormalizedMean is the weighted mean of the shift-normalized
	// measures on the probe, mapped back and back-projected like the
	// barycenter: the barycenter's control without transport.
	MethodNormalizedMean = "normalized-mean"
	// MethodBarycenter is the entropic Wasserstein barycenter of the
	// shift-normalized measures on the probe, with Options.Solver.
	MethodBarycenter = "barycenter"
	// MethodDebiased is MethodBarycenter with the ot.Debiased solver.
	MethodDebiased = "debiased"
	// MethodMedian is the coordinate-wise weighted median of θ.
	MethodMedian = "median"
	// MethodTrimmedMean is the coordinate-wise weighted trimmed mean of θ.
	MethodTrimmedMean = "trimmed-mean"
	// MethodGeometricMedian is the weighted geometric median of θ (Weiszfeld).
	MethodGeometricMedian = "geometric-median"
	// MethodKrum is Krum's choice of one client's θ.
	MethodKrum = "krum"
	// MethodMultiKrum averages the θ of the K − f clients Krum scores best.
	MethodMultiKrum = "multi-krum"
	// MethodRewardMedian is the per-support-point weighted median of the
	// shift-normalized measures, mapped back and back-projected.
	MethodRewardMedian = "reward-median"
	// MethodRewardTrimmedMean is the per-support-point weighted trimmed mean
	// of the shift-normalized measures, mapped back and back-projected.
	MethodRewardTrimmedMean = "reward-trimmed-mean"
	// MethodWassersteinMedian is the geometric median of the
	// shift-normalized measures in the probe lattice's transport geometry
	// (Weiszfeld over debiased barycenters), mapped back and back-projected.
	MethodWassersteinMedian = "wasserstein-median"

	// MethodBarycentric is the barycenter's name before the registry, still
	// accepted everywhere as an alias of MethodBarycenter (stored tasks and
	// old commands keep working); outputs print MethodBarycenter.
	MethodBarycentric = "barycentric"
)

// Client weightings (Options.Weighting).
const (
	// WeightingUniform gives every client the weight 1/K, the default.
	WeightingUniform = "uniform"
	// WeightingDemos makes α_i proportional to client i's demonstration
	// count, bounded so that no client can take the fusion over: a count of
	// 0 (a private client does not report one) counts as the lower median m
	// of the positive counts, and every count is capped at DemoCap·m
	// (Options.ClientWeights).
	WeightingDemos = "demos"
)

// Shift modes of the reward-space methods (Options.SigmaMode).
const (
	// SigmaShared shifts every client by one σ (Options.Sigma, or AutoSigma
	// over all clients' rewards), the default.
	SigmaShared = "shared"
	// SigmaPerClient shifts client i by σ_i = AutoSigma(r̂_i) of its own
	// reward, so scaling one client's θ by c > 0 leaves its measure unchanged.
	SigmaPerClient = "per-client"
)

// Defaults of the robust aggregators' options.
const (
	// DefaultTrimFraction is β of the trimmed means when trim_fraction is
	// absent: 0.2, Flower's FedTrimmedAvg default.
	DefaultTrimFraction = 0.2
	// DefaultDemoCap is the cap of WeightingDemos when demo_cap is absent:
	// no client is weighted with more than the lower median count m, so a
	// declared count above m buys nothing: a client's weight is never more
	// than the median client's, and one client's weight is at most
	// 1/(1 + ⌊K/2⌋) among K clients. Against uniform weights an attacker
	// declaring any count gains the factor m/w̄ (w̄ the mean capped weight),
	// 1 when the honest counts are equal; the earlier default 2 let it
	// double its pull (bench/robust).
	DefaultDemoCap = 1.0
)

// Options is the one configuration of a fusion: which method, how clients are
// weighted and, for the reward-space methods, the solver and the shift/scale
// of the reward ↔ measure maps. A federation task carries it as it is (JSON
// keys below); studies convert their own file keys to it in one place.
//
// Zero values mean: method "mean", weighting "uniform", solver ot.IBP, ε =
// ot.DefaultEps squared lattice spacings, ot's iteration defaults, shared
// automatic σ (AutoSigma) and Z = Σ α_i Z_i. Solver ot.Paper with MaxIter 50,
// InnerIter 10 and Tol −1 is the paper's fixed schedule. A key that the
// chosen method cannot use (trim_fraction for the median, sigma_mode for a θ
// method, ...) is refused by Validate, never ignored.
type Options struct {
	// Method is a registry name (Methods) or the alias "barycentric".
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
	// Sigma is the shared shift σ of T_σ; 0 means AutoSigma over the clients'
	// rewards. Refused with SigmaPerClient.
	Sigma float64 `json:"sigma,omitempty" yaml:"sigma,omitempty"`
	// SigmaMode is SigmaShared (the default; for wasserstein-median
	// SigmaPerClient unless Sigma is set) or SigmaPerClient; reward-space
	// methods only.
	SigmaMode string `json:"sigma_mode,omitempty" yaml:"sigma_mode,omitempty"`
	// Z is the scale used to map the fused measure back, r̄ = Z p̄ − σ1; 0
	// means the method's combination of the clients' normalizers Z_i (Σ α_i Z_i
	// for the mean and the barycenter; the server does not know Z(r*) of
	// Theorem 1).
	Z float64 `json:"z,omitempty" yaml:"z,omitempty"`
	// TrimFraction is β of trimmed-mean and reward-trimmed-mean, the weight
	// removed from each tail, 0 ≤ β < 1/2; absent means DefaultTrimFraction.
	TrimFraction *float64 `json:"trim_fraction,omitempty" yaml:"trim_fraction,omitempty"`
	// DemoCap bounds WeightingDemos: a client's count is capped at DemoCap
	// times the lower median of the positive counts, DemoCap ≥ 1, so one
	// client's weight is at most DemoCap/(DemoCap + ⌊K/2⌋); absent means
	// DefaultDemoCap. Refused with another weighting.
	DemoCap *float64 `json:"demo_cap,omitempty" yaml:"demo_cap,omitempty"`
	// Byzantine is the task's declared tolerance f, the number of clients
	// assumed Byzantine. For krum and multi-krum it needs K > 2f + 2 at
	// fusion time, and absent means the largest such f, ⌊(K − 3)/2⌋. For
	// trimmed-mean and reward-trimmed-mean it sets β to the weight of the f
	// heaviest clients (f/K under uniform weights), and a trim_fraction
	// below that is refused at fusion time; absent means trim_fraction (or
	// its default).
	Byzantine *int `json:"byzantine,omitempty" yaml:"byzantine,omitempty"`
	// GradTol is the gradient tolerance of a round method (joint): the
	// rounds stop once ‖Σ α_i ∇L_i‖₂ ≤ GradTol; 0 means
	// jointopt.DefaultGradTol. Refused with another method.
	GradTol float64 `json:"grad_tol,omitempty" yaml:"grad_tol,omitempty"`
	// MaxRounds caps a round method's rounds (trial points, line-search
	// trials included), 1 to jointopt.MaxRoundsLimit; 0 means
	// jointopt.DefaultMaxRounds. A federation task's rounds are this cap.
	// Refused with another method.
	MaxRounds int `json:"max_rounds,omitempty" yaml:"max_rounds,omitempty"`
	// Update is how joint's clients answer a round: UpdateNewton (the
	// default: value, gradient and Hessian; the server's Newton step),
	// UpdateFedAvg (E local Newton steps on the client's own objective
	// from the round's θ, averaged by the server) or UpdateFedProx (the
	// same on L_i(θ) − (μ/2)‖θ − θ_r‖²). Refused with another method.
	Update string `json:"update,omitempty" yaml:"update,omitempty"`
	// LocalSteps is E of UpdateFedAvg and UpdateFedProx, 1 to
	// MaxLocalSteps; 0 means DefaultLocalSteps. Refused with UpdateNewton.
	LocalSteps int `json:"local_steps,omitempty" yaml:"local_steps,omitempty"`
	// Mu is the proximal weight μ > 0 of UpdateFedProx (required there,
	// refused elsewhere).
	Mu float64 `json:"mu,omitempty" yaml:"mu,omitempty"`
}

// MethodName returns the registry name of the fusion method: the default
// "mean" for an empty Method, "barycenter" for the alias "barycentric", and
// Method itself otherwise (also when unknown; Validate refuses that).
func (o Options) MethodName() string {
	if c, ok := Canonical(o.Method); ok {
		return c
	}
	return o.Method
}

// Validate reports the first option that no fusion can run with, naming its
// JSON key.
func (o Options) Validate() error {
	m, err := Lookup(o.Method)
	if err != nil {
		return fmt.Errorf("fusion.method: %w", err)
	}
	name := m.Name()
	switch o.Weighting {
	case "", WeightingUniform, WeightingDemos:
	default:
		return fmt.Errorf("fusion.weighting %q: want %q or %q", o.Weighting, WeightingUniform, WeightingDemos)
	}
	if o.DemoCap != nil {
		if o.Weighting != WeightingDemos {
			return fmt.Errorf("fusion.demo_cap: weighting %q does not use demonstration counts; demo_cap applies to %q", o.Weighting, WeightingDemos)
		}
		if c := *o.DemoCap; !(c >= 1) || math.IsInf(c, 0) {
			return fmt.Errorf("fusion.demo_cap = %v: want a finite multiple ≥ 1 of the median count", c)
		}
	}
	if o.Solver < ot.IBP || o.Solver > ot.Paper {
		return fmt.Errorf("fusion.solver %d: unknown barycenter method", int(o.Solver))
	}
	if (name == MethodDebiased || name == MethodWassersteinMedian) && o.Solver != ot.IBP && o.Solver != ot.Debiased {
		return fmt.Errorf("fusion.solver %q: method %q always uses the %q solver; use method %q to choose another",
			o.Solver, name, ot.Debiased, MethodBarycenter)
	}
	if name == MethodWassersteinMedian && (o.MaxIter != 0 || o.InnerIter != 0 || o.Tol != 0) {
		return fmt.Errorf("fusion.max_iter, inner_iter, tol: method %q runs its own schedule (WassersteinMedianMaxIter, WassersteinMedianTol) and takes none of them", name)
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
	switch o.SigmaMode {
	case "", SigmaShared:
	case SigmaPerClient:
		if o.Sigma != 0 {
			return fmt.Errorf("fusion.sigma = %v with fusion.sigma_mode %q: a per-client shift is each client's AutoSigma; drop one of the two", o.Sigma, SigmaPerClient)
		}
	default:
		return fmt.Errorf("fusion.sigma_mode %q: want %q or %q", o.SigmaMode, SigmaShared, SigmaPerClient)
	}
	if o.SigmaMode != "" && m.Space() != RewardSpace {
		return fmt.Errorf("fusion.sigma_mode %q: method %q fuses θ and has no shift; sigma_mode applies to the reward-space methods", o.SigmaMode, name)
	}
	if o.TrimFraction != nil {
		if name != MethodTrimmedMean && name != MethodRewardTrimmedMean {
			return fmt.Errorf("fusion.trim_fraction: method %q does not trim; it applies to %q and %q", name, MethodTrimmedMean, MethodRewardTrimmedMean)
		}
		if b := *o.TrimFraction; !(b >= 0 && b < 0.5) {
			return fmt.Errorf("fusion.trim_fraction = %v: want 0 ≤ β < 0.5", b)
		}
	}
	if o.GradTol != 0 || o.MaxRounds != 0 {
		if m.Space() != JointSpace {
			return fmt.Errorf("fusion.grad_tol, fusion.max_rounds: method %q fuses once and has no gradient rounds; they apply to %q", name, MethodJoint)
		}
		if _, err := o.JointConfig(); err != nil {
			return err
		}
	}
	if err := o.checkUpdate(m); err != nil {
		return err
	}
	if o.Byzantine != nil {
		if name != MethodKrum && name != MethodMultiKrum && name != MethodTrimmedMean && name != MethodRewardTrimmedMean {
			return fmt.Errorf("fusion.byzantine: method %q takes no f; it applies to %q, %q, %q and %q",
				name, MethodKrum, MethodMultiKrum, MethodTrimmedMean, MethodRewardTrimmedMean)
		}
		if *o.Byzantine < 0 {
			return fmt.Errorf("fusion.byzantine = %d: want f ≥ 0", *o.Byzantine)
		}
	}
	return nil
}

// trimFraction returns β with its default applied.
func (o Options) trimFraction() float64 {
	if o.TrimFraction == nil {
		return DefaultTrimFraction
	}
	return *o.TrimFraction
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
// for clients with the given demonstration counts: nil (uniform) unless the
// weighting is WeightingDemos and some client reports a positive count. Under
// WeightingDemos client i's weight is its count d_i, with two bounds so that
// one client cannot take the fusion over: d_i = 0 (not reported: private
// clients send 0) counts as the lower median m of the positive counts (the
// ⌈P/2⌉-th smallest of P), and every count is capped at c·m, c = DemoCap.
// At least ⌊K/2⌋ + 1 clients then weigh ≥ m, so no client's normalized
// weight exceeds c/(c + ⌊K/2⌋). Counts 0, 0, 0, 1 weigh 1, 1, 1, 1, and
// 1, 1, 1, 1000 weigh 1, 1, 1, 2. The returned weights are what is fused
// (the federation records them, normalized, with the result). Mean and
// Barycentric normalize them with Weights (ot's barycenter renormalizes the
// α it is given, which can move their last bits).
func (o Options) ClientWeights(demoCounts []int) []float64 {
	if o.Weighting != WeightingDemos {
		return nil
	}
	var pos []float64
	for _, c := range demoCounts {
		if c > 0 {
			pos = append(pos, float64(c))
		}
	}
	if len(pos) == 0 {
		return nil
	}
	slices.Sort(pos)
	m := pos[(len(pos)-1)/2]
	limit := DefaultDemoCap * m
	if o.DemoCap != nil {
		limit = *o.DemoCap * m
	}
	w := make([]float64, len(demoCounts))
	for i, c := range demoCounts {
		w[i] = m
		if c > 0 {
			w[i] = min(float64(c), limit)
		}
	}
	return w
}
