package fusion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/fedirl/fedirl/pkg/features"
)

// Contribution is one client's input to a fusion: its parameters θ_i on the
// probe's feature map Φ, or its reward values on the probe's support, one
// per lattice point in the lattice's row-major order (the rows of Φ), from
// any model the client likes (other features, a neural network). Exactly
// one of Theta and Reward is set.
type Contribution struct {
	// Theta is θ_i, of length the number of columns of Φ; nil for a reward
	// contribution.
	Theta []float64
	// Reward is r_i(x) for every probe point x; nil for a θ contribution.
	Reward []float64
}

// rewardFuser is implemented by the methods that can fuse clients' rewards
// on the probe beside (or instead of) θ: every reward-space method (its path
// starts from the rewards r̂_i) and the mean (the weighted mean of the reward
// vectors). rs[i] is client i's reward on the probe when it contributed one,
// nil when it sent θ (in.Thetas[i], evaluated as Φθ_i).
type rewardFuser interface {
	fuseRewards(ctx context.Context, in Input, rs [][]float64) (Output, error)
}

// AcceptsRewards reports whether the method called name (a registry name or
// an alias) can fuse reward contributions: the reward-space methods and the
// mean do; the other θ-space methods (median, trimmed-mean,
// geometric-median, krum, multi-krum) need every client's θ on one Φ.
func AcceptsRewards(name string) (bool, error) {
	m, err := Lookup(name)
	if err != nil {
		return false, err
	}
	_, ok := m.(rewardFuser)
	return ok, nil
}

// RewardMethods returns, in registry order, the names of the methods that
// accept reward contributions.
func RewardMethods() []string {
	var out []string
	for _, m := range registry {
		if _, ok := m.(rewardFuser); ok {
			out = append(out, m.Name())
		}
	}
	return out
}

// ErrNoRewardInputs is wrapped by the error of a fusion whose method cannot
// take the reward contributions it was given (AcceptsRewards is false).
var ErrNoRewardInputs = errors.New("the method fuses θ and cannot take rewards on the probe")

// FuseContributions fuses K contributions, θ_i or rewards on the probe,
// with weights (nil: uniform) by the method of opt. When every contribution
// is θ it is FuseContext exactly. Otherwise the method must accept rewards
// (AcceptsRewards): the θ contributions are evaluated as r̂_i = Φθ_i, and
//
//   - mean fuses r̄ = Σ α_i r_i, a plain weighted mean of the reward vectors;
//   - every reward-space method runs its usual path from the r_i
//     (shift-normalize, combine, map back);
//
// and the fused reward r̄ on the probe (Output.Reward.Reward) is
// back-projected onto Φ, θ̄ = argmin ‖Φθ − r̄‖₂ (Output.Theta). A client that
// sends the values Φθ_i therefore fuses as one that sends θ_i: the same
// measures, up to the rounding of Φθ_i and of the least squares. The
// distances (Output.Distances) are the RMS distances on the probe between
// each client's reward r_i and Φθ̄, as for θ, and the outlier scores
// (Output.OutlierScores) are computed from the r_i as for θ. It errors naming the
// client on a contribution with both or neither part, a θ whose length is
// not Φ's columns, a reward whose length is not the probe's points, or a
// non-finite value.
func FuseContributions(ctx context.Context, p Probe, cs []Contribution, weights []float64, opt Options) (Output, error) {
	thetas := make([][]float64, len(cs))
	rewards := 0
	for i, c := range cs {
		switch {
		case c.Theta != nil && c.Reward != nil:
			return Output{}, fmt.Errorf("fusion: client %d contributed both θ and a reward; want exactly one", i)
		case c.Reward != nil:
			rewards++
		case c.Theta == nil:
			return Output{}, fmt.Errorf("fusion: client %d contributed neither θ nor a reward", i)
		}
		thetas[i] = c.Theta
	}
	if rewards == 0 {
		return FuseContext(ctx, p, thetas, weights, opt)
	}
	if err := opt.Validate(); err != nil {
		return Output{}, err
	}
	m, err := Lookup(opt.Method)
	if err != nil {
		return Output{}, err
	}
	rf, ok := m.(rewardFuser)
	if !ok {
		return Output{}, fmt.Errorf("fusion: %d of %d clients contributed rewards on the probe; method %q: %w (use one of %s)",
			rewards, len(cs), m.Name(), ErrNoRewardInputs, strings.Join(RewardMethods(), ", "))
	}
	if err := p.Validate(); err != nil {
		return Output{}, err
	}
	n, d := p.Phi.Dims()
	rs := make([][]float64, len(cs))
	for i, c := range cs {
		v, what, want := c.Theta, "θ", d
		if c.Reward != nil {
			v, what, want = c.Reward, "reward", n
			rs[i] = c.Reward
		}
		if len(v) != want {
			if c.Reward != nil {
				return Output{}, fmt.Errorf("fusion: client %d reward has %d values, the probe has %d points", i, len(v), n)
			}
			return Output{}, fmt.Errorf("fusion: client %d θ has length %d, probe Φ has %d columns", i, len(v), d)
		}
		for k, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return Output{}, fmt.Errorf("fusion: client %d %s[%d] = %v", i, what, k, x)
			}
		}
	}
	alpha, err := Weights(weights, len(cs))
	if err != nil {
		return Output{}, err
	}
	out, err := rf.fuseRewards(ctx, Input{Probe: p, Thetas: thetas, Alpha: alpha, Options: opt}, rs)
	if err != nil {
		return Output{}, err
	}
	out.Method = m.Name()
	all := probeRewards(p.Phi, thetas, rs)
	out.Distances, out.DistanceSpace = rewardDistances(p, all, out.Theta), "reward"
	out.OutlierScores = OutlierScores(all)
	return out, nil
}

// fuseRewards implements rewardFuser for the mean: r̄ = Σ α_i r_i (summed in
// client order), θ̄ = BackProject(Φ, r̄).
func (meanMethod) fuseRewards(_ context.Context, in Input, given [][]float64) (Output, error) {
	rs := probeRewards(in.Probe.Phi, in.Thetas, given)
	rbar := weightedMean(rs, in.Alpha)
	th, err := BackProject(in.Probe.Phi, rbar)
	if err != nil {
		return Output{}, err
	}
	return Output{Theta: th, Reward: &Result{Theta: th, Reward: rbar}}, nil
}

// rewardDistances returns √(Σ_x (r_i − Φθ̄)(x)² / |X|) for every client.
func rewardDistances(p Probe, rs [][]float64, fused []float64) []float64 {
	rf := features.Reward(nil, p.Phi, fused)
	out := make([]float64, len(rs))
	for i, r := range rs {
		s := 0.0
		for x, v := range r {
			s += (v - rf[x]) * (v - rf[x])
		}
		out[i] = math.Sqrt(s / float64(len(r)))
	}
	return out
}
