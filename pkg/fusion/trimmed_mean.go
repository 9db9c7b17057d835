package fusion

import "context"

// trimmedMeanMethod is MethodTrimmedMean, the coordinate-wise weighted
// β-trimmed mean of θ (Yin et al. 2018; Flower's FedTrimmedAvg), β =
// Options.TrimFraction (default DefaultTrimFraction): per coordinate, weight
// β is removed from each tail of the sorted values and the rest averaged.
//
// What it bounds: its breakdown point is β. Clients of total weight below β
// (f < βK under uniform weights) cannot move any coordinate of θ̄ outside the
// range of the other clients' values of that coordinate; above β one
// client's value enters the average and moves it without limit.
type trimmedMeanMethod struct{}

func (trimmedMeanMethod) Name() string { return MethodTrimmedMean }
func (trimmedMeanMethod) Space() Space { return ThetaSpace }

func (trimmedMeanMethod) Fuse(_ context.Context, in Input) (Output, error) {
	s, beta := newOrderStats(in.Alpha), in.Options.trimFraction()
	return Output{Theta: coordinatewise(in.Thetas, func(c []float64) float64 { return s.trimmedMean(c, beta) })}, nil
}

// rewardTrimmedMean is MethodRewardTrimmedMean: p̄(x) is the weighted
// β-trimmed mean of the p_i(x) at every probe point x (not renormalized),
// r̄ = Z p̄ − σ1 with Z the β-trimmed mean of the Z_i (and σ that of the σ_i
// under SigmaPerClient), θ = BackProject(Φ, r̄).
//
// What it bounds: with SigmaPerClient, clients of total weight below β
// cannot move p̄(x), Z or σ outside the other clients' range (breakdown
// point β for the fused reward on the probe). Under SigmaShared the one σ
// depends on every client, as for reward-median.
var rewardTrimmedMean = rewardMethod{name: MethodRewardTrimmedMean, combine: trimmedMeanOfMeasures, scalar: trimmedMeanScalar}

func trimmedMeanOfMeasures(_ context.Context, in Input, ps [][]float64) (combined, error) {
	s, beta := newOrderStats(in.Alpha), in.Options.trimFraction()
	return combined{p: coordinatewise(ps, func(c []float64) float64 { return s.trimmedMean(c, beta) })}, nil
}

func trimmedMeanScalar(v, alpha []float64, opt Options) float64 {
	return newOrderStats(alpha).trimmedMean(v, opt.trimFraction())
}
