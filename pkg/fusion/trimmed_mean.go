package fusion

import (
	"context"
	"fmt"
	"slices"
)

// trimmedMeanMethod is MethodTrimmedMean, the coordinate-wise weighted
// β-trimmed mean of θ (Yin et al. 2018; Flower's FedTrimmedAvg): per
// coordinate, weight β is removed from each tail of the sorted values and
// the rest averaged. β comes from the task's declared tolerance when it sets
// byzantine = f (Options.Byzantine): the total weight of the f heaviest
// clients, f/K under uniform weights, so exactly f clients are trimmed from
// each tail; an explicit trim_fraction below that is refused at fusion time,
// as is an f whose clients weigh 1/2 or more. With neither key β is
// DefaultTrimFraction.
//
// What it bounds: its breakdown point is β. Clients of total weight at most
// β (f ≤ βK under uniform weights; with byzantine = f, any f clients) cannot
// move any coordinate of θ̄ outside the range of the other clients' values of
// that coordinate; above β one client's value enters the average and moves it
// without limit. The default β = 0.2 therefore tolerates f ≤ ⌊0.2K⌋ (2 of 11,
// 2 of 13): declare byzantine for more.
type trimmedMeanMethod struct{}

func (trimmedMeanMethod) Name() string { return MethodTrimmedMean }
func (trimmedMeanMethod) Space() Space { return ThetaSpace }

func (trimmedMeanMethod) Fuse(_ context.Context, in Input) (Output, error) {
	s := newOrderStats(in.Alpha)
	cut, err := trimCut(s, in.Options)
	if err != nil {
		return Output{}, err
	}
	return Output{Theta: coordinatewise(in.Thetas, func(c []float64) float64 { return s.trimmedMean(c, cut) })}, nil
}

// trimCut returns the weight (in s's units) removed from each tail: β times
// the total weight, or with Options.Byzantine = f the weight of the f
// heaviest clients, refusing a trim_fraction that trims less than that and an
// f whose clients weigh half of the total or more.
func trimCut(s *orderStats, o Options) (float64, error) {
	total := 0.0
	for _, u := range s.u {
		total += u
	}
	if o.Byzantine == nil {
		return o.trimFraction() * total, nil
	}
	f := *o.Byzantine
	if f >= len(s.u) {
		return 0, fmt.Errorf("fusion: byzantine = %d of %d clients: a trimmed mean cannot tolerate every client being Byzantine", f, len(s.u))
	}
	heavy := slices.Clone(s.u)
	slices.Sort(heavy)
	need := 0.0
	for _, u := range heavy[len(heavy)-f:] {
		need += u
	}
	if !(2*need < total) {
		return 0, fmt.Errorf("fusion: byzantine = %d of %d clients: their weight %.4g of the total is at least 1/2, more than a trimmed mean can remove from each tail; declare fewer Byzantine clients or use the median",
			f, len(s.u), need/total)
	}
	if o.TrimFraction == nil {
		return need, nil
	}
	if beta := *o.TrimFraction; beta*total < need {
		return 0, fmt.Errorf("fusion: trim_fraction = %v removes weight %.4g of %d clients from each tail, less than the %.4g that byzantine = %d clients may hold: raise trim_fraction to at least %.4g or drop it (byzantine then sets β)",
			beta, beta*total, len(s.u), need, f, need/total)
	}
	return o.trimFraction() * total, nil
}

// rewardTrimmedMean is MethodRewardTrimmedMean: p̄(x) is the weighted
// β-trimmed mean of the p_i(x) at every probe point x (not renormalized),
// r̄ = Z p̄ − σ1 with Z the β-trimmed mean of the Z_i (and under
// SigmaPerClient σ such that r̄'s mean/std ratio on the probe is the β-trimmed
// mean of the clients', as for reward-median), θ = BackProject(Φ, r̄); β as
// for trimmed-mean (from byzantine when the task declares it).
//
// What it bounds: with SigmaPerClient, clients of total weight at most β
// cannot move p̄(x), Z or r̄'s mean/std ratio outside the other clients'
// range (breakdown point β for the fused reward on the probe). Under SigmaShared the one σ
// depends on every client, as for reward-median.
var rewardTrimmedMean = rewardMethod{name: MethodRewardTrimmedMean, combine: trimmedMeanOfMeasures, scalar: trimmedMeanScalar, check: checkTrim, meanOffset: true}

func trimmedMeanOfMeasures(_ context.Context, in Input, ps [][]float64) (combined, error) {
	s := newOrderStats(in.Alpha)
	cut, err := trimCut(s, in.Options)
	if err != nil {
		return combined{}, err
	}
	return combined{p: coordinatewise(ps, func(c []float64) float64 { return s.trimmedMean(c, cut) })}, nil
}

// trimmedMeanScalar is the trimmed mean of the clients' Z_i or σ_i; its cut
// was checked by checkTrim before the path started.
func trimmedMeanScalar(v, alpha []float64, opt Options) float64 {
	s := newOrderStats(alpha)
	cut, err := trimCut(s, opt)
	if err != nil {
		panic(err) // checkTrim ran first
	}
	return s.trimmedMean(v, cut)
}

// checkTrim refuses the trim of opt for the weights alpha before a
// reward-space path starts.
func checkTrim(alpha []float64, opt Options) error {
	_, err := trimCut(newOrderStats(alpha), opt)
	return err
}
