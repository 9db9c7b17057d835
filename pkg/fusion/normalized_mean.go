package fusion

import "context"

// normalizedMean is MethodNormalizedMean: p̄ = Σ α_i T_σi(r̂_i), r̄ = Z p̄ − σ1
// with Z = Σ α_i Z_i (and σ = Σ α_i σ_i under SigmaPerClient), θ =
// BackProject(Φ, r̄). It is the barycenter with the barycenter replaced by the
// arithmetic mean of the measures, so barycenter − normalized-mean isolates
// the effect of transport.
//
// What it bounds: under SigmaShared, nothing (one client's range enters σ
// and its Z_i enters Z; breakdown point 0). Under SigmaPerClient each measure
// is scale-free, so client j moves p̄ by at most α_j‖p_j − p̄_others‖ (its
// influence on the shape is bounded by its weight, whatever it sends), while
// the map-back scale Σ α_i Z_i stays unbounded. An attacker's measure still
// adds α_j p_j pointwise, so a spike of height α_j survives (unlike the
// barycenter, which moves mass instead of adding it).
var normalizedMean = rewardMethod{name: MethodNormalizedMean, combine: meanOfMeasures, scalar: weightedMeanScalar}

func meanOfMeasures(_ context.Context, in Input, ps [][]float64) (combined, error) {
	p := make([]float64, len(ps[0]))
	for i, pi := range ps {
		for x, v := range pi {
			p[x] += in.Alpha[i] * v
		}
	}
	return combined{p: p}, nil
}
