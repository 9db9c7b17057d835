package fusion

import "context"

// medianMethod is MethodMedian, the coordinate-wise weighted median of θ
// (Yin et al. 2018; Flower's FedMedian).
//
// What it bounds: its breakdown point is 1/2. Clients of total weight below
// 1/2 (f < K/2 under uniform weights), whatever they send, cannot move any
// coordinate of θ̄ outside the range of the other clients' values of that
// coordinate. It ignores the correlation between coordinates, so θ̄ need not
// be any client's θ.
type medianMethod struct{}

func (medianMethod) Name() string { return MethodMedian }
func (medianMethod) Space() Space { return ThetaSpace }

func (medianMethod) Fuse(_ context.Context, in Input) (Output, error) {
	s := newOrderStats(in.Alpha)
	return Output{Theta: coordinatewise(in.Thetas, s.median)}, nil
}

// rewardMedian is MethodRewardMedian: p̄(x) is the weighted median of the
// p_i(x) at every probe point x (not renormalized), r̄ = Z p̄ − σ1 with Z the
// weighted median of the Z_i, θ = BackProject(Φ, r̄). σ is the shared one,
// or under SigmaPerClient the one that gives r̄ the weighted median of the
// clients' mean/std ratios on the probe (rewardMethod.meanOffset; the median
// of the σ_i, used before, let a reversed reward of honest scale move θ to
// EPIC 0.48 through the constant it left in r̄).
//
// What it bounds: with SigmaPerClient, clients of total weight below 1/2
// cannot move p̄(x) outside the other clients' range at any point x, nor Z
// and the mean/std ratio of r̄ outside theirs (breakdown point 1/2 for the
// fused reward on the probe; the least-squares θ inherits it through the
// fixed linear map BackProject). Under SigmaShared the one σ = AutoSigma over all clients
// depends on every client, so the bound holds for the measures at that σ but
// not for the shift itself: use SigmaPerClient when clients are untrusted.
var rewardMedian = rewardMethod{name: MethodRewardMedian, combine: medianOfMeasures, scalar: medianScalar, meanOffset: true}

func medianOfMeasures(_ context.Context, in Input, ps [][]float64) (combined, error) {
	s := newOrderStats(in.Alpha)
	return combined{p: coordinatewise(ps, s.median)}, nil
}

func medianScalar(v, alpha []float64, _ Options) float64 {
	return newOrderStats(alpha).median(v)
}
