package fusion

import (
	"context"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/features"
)

// Output is the outcome of Fuse: the fused θ, the method's diagnostics and
// every client's distance to the fused result.
type Output struct {
	// Theta is the fused parameter vector.
	Theta []float64
	// Method is the registry name of the method that produced it
	// (Options.MethodName(): "barycenter" also when asked for "barycentric").
	Method string
	// Barycentric is the full result of the barycenter methods (barycenter,
	// debiased); nil for every other method. It is the same value as Reward.
	Barycentric *Result
	// Reward is the full result of every reward-space method: the combined
	// measure p̄, the fused reward r̄ = Z p̄ − σ1 on the probe before
	// projection, σ, Z and the clients' σ_i, Z_i; nil for θ-space methods,
	// except the mean of reward contributions (FuseContributions), which
	// sets its Theta and Reward (r̄ = Σ α_i r_i) only.
	Reward *Result
	// Distances is each client's outlier score, in client order: the root
	// mean square distance on the probe between its reward Φθ_i and the
	// fused reward Φθ̄, √(Σ_x (Φθ_i − Φθ̄)(x)² / |X|), when the probe has a
	// feature matrix, else the Euclidean distance ‖θ_i − θ̄‖₂ (DistanceSpace
	// says which).
	Distances []float64
	// DistanceSpace is "reward" or "theta", the space of Distances.
	DistanceSpace string
	// OutlierScores is each client's outlier score, in client order: the
	// robust z-score of its reward on the probe against the median client's
	// (OutlierScores, the function; θ itself stands for the reward when the
	// probe has no feature matrix). It does not depend on the fused result,
	// so a client that moved the fusion cannot hide behind it; a score above
	// OutlierThreshold is what Flagged reports and the federation warns of.
	OutlierScores []float64
}

// Fuse fuses thetas with weights (nil means uniform) by the method of opt,
// on the probe p when the method works in reward space.
func Fuse(p Probe, thetas [][]float64, weights []float64, opt Options) (Output, error) {
	return FuseContext(context.Background(), p, thetas, weights, opt)
}

// FuseContext is Fuse that a cancelled ctx stops between barycenter
// iterations, returning an error wrapping ctx's error. It validates opt,
// checks the θ_i (same length, finite) and the weights, dispatches to the
// registered method and computes the clients' distances to the result.
func FuseContext(ctx context.Context, p Probe, thetas [][]float64, weights []float64, opt Options) (Output, error) {
	if err := opt.Validate(); err != nil {
		return Output{}, err
	}
	m, err := Lookup(opt.Method)
	if err != nil {
		return Output{}, err
	}
	d, err := checkThetas(thetas)
	if err != nil {
		return Output{}, err
	}
	if p.Phi != nil {
		if _, pd := p.Phi.Dims(); pd != d {
			return Output{}, fmt.Errorf("fusion: θ has length %d, probe Φ has %d columns", d, pd)
		}
	} else if m.Space() == RewardSpace {
		return Output{}, fmt.Errorf("fusion: method %q needs a probe", m.Name())
	}
	alpha, err := Weights(weights, len(thetas))
	if err != nil {
		return Output{}, err
	}
	out, err := m.Fuse(ctx, Input{Probe: p, Thetas: thetas, Alpha: alpha, Options: opt})
	if err != nil {
		return Output{}, err
	}
	out.Method = m.Name()
	out.Distances, out.DistanceSpace = distances(p, thetas, out.Theta)
	if p.Phi != nil {
		out.OutlierScores = OutlierScores(probeRewards(p.Phi, thetas, nil))
	} else {
		out.OutlierScores = OutlierScores(thetas)
	}
	return out, nil
}

// distances returns each client's distance to the fused θ: RMS on the probe's
// rewards when p has Φ, Euclidean on θ otherwise.
func distances(p Probe, thetas [][]float64, fused []float64) ([]float64, string) {
	out := make([]float64, len(thetas))
	if p.Phi == nil {
		for i, th := range thetas {
			s := 0.0
			for k, v := range th {
				s += (v - fused[k]) * (v - fused[k])
			}
			out[i] = math.Sqrt(s)
		}
		return out, "theta"
	}
	diff := make([]float64, len(fused))
	var r []float64
	for i, th := range thetas {
		for k, v := range th {
			diff[k] = v - fused[k]
		}
		r = features.Reward(r, p.Phi, diff)
		s := 0.0
		for _, v := range r {
			s += v * v
		}
		out[i] = math.Sqrt(s / float64(len(r)))
	}
	return out, "reward"
}
