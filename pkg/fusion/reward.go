package fusion

import (
	"context"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/features"
	"gonum.org/v1/gonum/mat"
)

// Result is the outcome of a reward-space fusion (the barycenter, the
// normalized mean, the reward median, ...).
type Result struct {
	// Theta is the fused parameter vector argmin ‖Φθ − r̄‖₂.
	Theta []float64
	// Barycenter is the combined measure p̄ on the probe lattice: the
	// barycenter for the barycenter methods, the weighted mean, median or
	// trimmed mean of the measures for the others (the latter two need not
	// sum to one; they are mapped back as they are).
	Barycenter []float64
	// Reward is the mapped-back reward r̄ = Z p̄ − σ1 (before projection).
	Reward []float64
	// Sigma and Z are the shift and the map-back scale actually used.
	Sigma, Z float64
	// ClientSigma holds the shift σ_i each client's measure was made with:
	// all equal to Sigma under SigmaShared, AutoSigma(r̂_i) under
	// SigmaPerClient.
	ClientSigma []float64
	// ClientZ holds Z(r̂_i) = 1ᵀ(r̂_i + σ_i1) per client.
	ClientZ []float64
	// MarginalError is ot's marginal violation at the returned iterate (0 for
	// methods without a solver).
	MarginalError float64
	// Iterations is the number of barycenter iterations run (0 for methods
	// without a solver).
	Iterations int
}

// combined is what a reward-space method makes of the clients' measures.
type combined struct {
	p             []float64
	marginalError float64
	iterations    int
}

// rewardMethod is a reward-space Method. Every such method shares the path
// r̂_i = Φθ_i → p_i = T_σi(r̂_i) → p̄ → r̄ = Z p̄ − σ1 → θ = BackProject(Φ, r̄)
// and differs only in combine (the measures into p̄) and scalar (the clients'
// Z_i, and σ_i under SigmaPerClient, into the Z and σ of the map back).
type rewardMethod struct {
	name    string
	combine func(ctx context.Context, in Input, ps [][]float64) (combined, error)
	scalar  func(v, alpha []float64, opt Options) float64
	// meanOffset marks the robust methods (reward-median,
	// reward-trimmed-mean, wasserstein-median): under SigmaPerClient their
	// map back takes σ so that the fused reward's mean over the probe, in
	// units of its standard deviation there, is scalar of the clients' own
	// ratios q_i = mean r̂_i / std r̂_i (clients with a constant reward left
	// out): σ = Z·(mean p̄ − q̄·std p̄). scalar(σ_i) and scalar(Z_i) come from
	// different clients when the honest scales differ, and the constant
	// their mismatch leaves in r̄ is fitted by Φ (which has no constant
	// column) as a change of θ; a reversed reward of honest scale moved the
	// reward median's θ by that route (bench/robust). q_i is scale-free and
	// shared by clients whose rewards have the same shape, so an attacker
	// at an extreme moves q̄ by at most a rank among the honest q_i.
	meanOffset bool
	// perClientDefault makes SigmaPerClient the method's shift when the
	// options name neither sigma_mode nor sigma (wasserstein-median: a
	// shared σ lets one client's reward range flatten every measure).
	perClientDefault bool
	// check, if set, refuses options the method cannot run with for these
	// weights (a trim too small for the declared tolerance) before the path
	// starts.
	check func(alpha []float64, opt Options) error
	// barycentric marks the barycenter methods, whose Output also carries
	// the result as Output.Barycentric.
	barycentric bool
}

func (m rewardMethod) Name() string { return m.name }
func (m rewardMethod) Space() Space { return RewardSpace }

func (m rewardMethod) Fuse(ctx context.Context, in Input) (Output, error) {
	return m.fuseRewards(ctx, in, nil)
}

// fuseRewards implements rewardFuser: the path starts from the clients'
// rewards on the probe, rs[i] when given, r̂_i = Φθ_i otherwise.
func (m rewardMethod) fuseRewards(ctx context.Context, in Input, rs [][]float64) (Output, error) {
	res, err := fuseRewards(ctx, in, rs, m)
	if err != nil {
		return Output{}, err
	}
	out := Output{Theta: res.Theta, Reward: &res}
	if m.barycentric {
		out.Barycentric = &res
	}
	return out, nil
}

// probeRewards returns every client's reward on the probe: given[i] when
// given has it (a reward contribution), else r̂_i = Φθ_i.
func probeRewards(phi *mat.Dense, thetas, given [][]float64) [][]float64 {
	rs := make([][]float64, len(thetas))
	for i, th := range thetas {
		if i < len(given) && given[i] != nil {
			rs[i] = given[i]
			continue
		}
		rs[i] = features.Reward(nil, phi, th)
	}
	return rs
}

// fuseRewards runs the shared reward-space path of m on in (θ_i already
// checked, α normalized); given holds the clients' rewards on the probe
// where they contributed rewards instead of θ (nil: every client sent θ).
func fuseRewards(ctx context.Context, in Input, given [][]float64, m rewardMethod) (Result, error) {
	phi, opt := in.Probe.Phi, in.Options
	n, _ := phi.Dims()
	if in.Probe.Points != nil && len(in.Probe.Lattice.Axes) > 0 {
		return Result{}, fmt.Errorf("fusion: probe has both a lattice and points")
	}
	if m := in.Probe.Len(); m != n {
		kind := "lattice"
		if in.Probe.Scattered() {
			kind = "point set"
		}
		return Result{}, fmt.Errorf("fusion: probe %s has %d points, Φ has %d rows", kind, m, n)
	}
	if m.check != nil {
		if err := m.check(in.Alpha, opt); err != nil {
			return Result{}, err
		}
	}
	k := len(in.Thetas)
	rs := probeRewards(phi, in.Thetas, given)
	res := Result{Sigma: opt.Sigma, ClientSigma: make([]float64, k), ClientZ: make([]float64, k)}
	perClient := opt.SigmaMode == SigmaPerClient || (opt.SigmaMode == "" && opt.Sigma == 0 && m.perClientDefault)
	if !perClient && res.Sigma == 0 {
		res.Sigma = AutoSigma(rs...)
	}
	ps := make([][]float64, k)
	for i, r := range rs {
		res.ClientSigma[i] = res.Sigma
		if perClient {
			res.ClientSigma[i] = AutoSigma(r)
		}
		var err error
		ps[i], res.ClientZ[i], err = ShiftNormalize(nil, r, res.ClientSigma[i])
		if err != nil {
			return Result{}, fmt.Errorf("fusion: client %d: %w", i, err)
		}
	}
	if perClient {
		res.Sigma = m.scalar(res.ClientSigma, in.Alpha, opt)
	}
	res.Z = opt.Z
	if res.Z == 0 {
		res.Z = m.scalar(res.ClientZ, in.Alpha, opt)
	}
	c, err := m.combine(ctx, in, ps)
	if err != nil {
		return Result{}, err
	}
	if perClient && m.meanOffset {
		if q, ok := offsetRatio(rs, in.Alpha, func(v, a []float64) float64 { return m.scalar(v, a, opt) }); ok {
			mean, sd := meanStd(c.p)
			res.Sigma = res.Z * (mean - q*sd)
		}
	}
	res.Barycenter, res.MarginalError, res.Iterations = c.p, c.marginalError, c.iterations
	res.Reward = make([]float64, n)
	for x, p := range c.p {
		res.Reward[x] = res.Z*p - res.Sigma
	}
	res.Theta, err = BackProject(phi, res.Reward)
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// weightedMeanScalar returns Σ α_i v_i, summed in client order.
func weightedMeanScalar(v, alpha []float64, _ Options) float64 {
	s := 0.0
	for i, x := range v {
		s += alpha[i] * x
	}
	return s
}

// offsetRatio returns stat over the clients with a non-constant reward of
// their mean/std ratios on the probe (with their weights, renormalized);
// ok is false when every reward is constant.
func offsetRatio(rs [][]float64, alpha []float64, stat func(v, alpha []float64) float64) (float64, bool) {
	var q, a []float64
	for i, r := range rs {
		mean, sd := meanStd(r)
		if sd > 0 && alpha[i] > 0 {
			q, a = append(q, mean/sd), append(a, alpha[i])
		}
	}
	if len(q) == 0 {
		return 0, false
	}
	w, err := Weights(a, len(a))
	if err != nil {
		return 0, false
	}
	return stat(q, w), true
}

// meanStd returns the mean and the (population) standard deviation of v.
func meanStd(v []float64) (float64, float64) {
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)))
}
