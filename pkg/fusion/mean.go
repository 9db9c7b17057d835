package fusion

import "context"

// meanMethod is MethodMean, parameter averaging (FedAvg): θ = Σ α_i θ_i.
//
// What it bounds: nothing. Its breakdown point is 0: one client of weight
// α_j > 0 sending c·θ moves θ̄ by α_j(c·θ − θ_j), without limit as c grows.
type meanMethod struct{}

func (meanMethod) Name() string { return MethodMean }
func (meanMethod) Space() Space { return ThetaSpace }

func (meanMethod) Fuse(_ context.Context, in Input) (Output, error) {
	return Output{Theta: weightedMean(in.Thetas, in.Alpha)}, nil
}

// weightedMean returns Σ α_i θ_i, summed in client order.
func weightedMean(thetas [][]float64, alpha []float64) []float64 {
	out := make([]float64, len(thetas[0]))
	for i, th := range thetas {
		for k, v := range th {
			out[k] += alpha[i] * v
		}
	}
	return out
}

// Mean returns the weighted parameter average Σ α_i θ_i (FedAvg); weights nil
// means uniform. The sum runs in client order, so the result is reproducible.
func Mean(thetas [][]float64, weights []float64) ([]float64, error) {
	if _, err := checkThetas(thetas); err != nil {
		return nil, err
	}
	alpha, err := Weights(weights, len(thetas))
	if err != nil {
		return nil, err
	}
	return weightedMean(thetas, alpha), nil
}
