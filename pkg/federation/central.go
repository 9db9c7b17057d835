package federation

import (
	"context"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// Central differential privacy around the fuser (TaskSpec.CentralPrivacy):
// the coordinator clips every θ_i to C, hands the clipped θ_i to the task's
// fuser with no demonstration counts (so that the weights cannot depend on
// the clients' data), checks that the output is the weighted mean
// Σ α_i clip_C(θ_i) of its inputs under the weights it reports, and adds
// N(0, (σ·2C·max α_i)² I) before the result is stored or served. The
// check is what makes the sensitivity 2C·max α_i a fact rather than an
// assumption about the fuser: a fusion that is not a weighted mean (a
// barycenter, a median, a normalized mean) is refused when the task is
// created and, should one slip through, fails the round instead of
// releasing a result whose sensitivity is unknown. With bound "output" the
// server instead clips the fused θ to C, so that any fusion (barycenter,
// median, normalized mean) has sensitivity 2C: no √K gain, but no
// assumption about the fuser.

// weightedMeanTolerance bounds |fused − Σ α_i x_i| per component, relative
// to C, for a fusion to count as a weighted mean (rounding of a sum of a
// few thousand terms stays far below it).
const weightedMeanTolerance = 1e-9

// checkWeightedMean returns nil when out.Theta is Σ out.Weights[i]·xs[i]
// with weights in [0, 1] summing to 1, to weightedMeanTolerance·clip.
func checkWeightedMean(out FuseOutput, xs [][]float64, clip float64) error {
	if len(out.Weights) != len(xs) {
		return fmt.Errorf("the fusion reported %d weights for %d inputs", len(out.Weights), len(xs))
	}
	var sum float64
	for i, w := range out.Weights {
		if !(w >= 0 && w <= 1) {
			return fmt.Errorf("the fusion reported weight %d = %v", i, w)
		}
		sum += w
	}
	if math.Abs(sum-1) > 1e-9 {
		return fmt.Errorf("the fusion's weights sum to %v", sum)
	}
	for k, v := range out.Theta {
		var want float64
		for i, x := range xs {
			want += out.Weights[i] * x[k]
		}
		if d := math.Abs(v - want); !(d <= weightedMeanTolerance*clip) {
			return fmt.Errorf("%s returned θ[%d] = %.17g where the weighted mean of its inputs is %.17g: central privacy needs a fusion that is a weighted mean of the clipped θ_i (method mean), whose sensitivity is 2C·max α_i",
				methodName(out.Method), k, v, want)
		}
	}
	return nil
}

func methodName(m string) string {
	if m == "" {
		return "the fusion"
	}
	return "fusion method " + m
}

// CheckCentralFusion fuses three synthetic clipped vectors (norms C, C/2,
// 0.8C, in different directions) with the task's fuser and refuses the task
// unless the result is their weighted mean: central privacy's sensitivity
// holds only for such a fusion. A coordinator runs it in CreateTask; a tool
// that writes tasks into a store offline runs it too.
func CheckCentralFusion(ctx context.Context, fuser Fuser, spec TaskSpec) error {
	if spec.CentralPrivacy.BoundName() == privacy.BoundOutput {
		return nil // the fused θ is clipped: any fusion has sensitivity 2C
	}
	c, d := spec.CentralPrivacy.Clip, spec.ThetaDim
	xs := [][]float64{make([]float64, d), make([]float64, d), make([]float64, d)}
	xs[0][0] = c
	xs[1][d-1] = -c / 2
	for k := range d {
		xs[2][k] = 0.8 * c / math.Sqrt(float64(d)) * float64(1-2*(k%2))
	}
	out, err := fuser.Fuse(ctx, spec, xs, make([]int, len(xs)))
	if err != nil {
		return fmt.Errorf("central_privacy: a trial fusion of three clipped vectors failed: %w", err)
	}
	if len(out.Theta) != d {
		return fmt.Errorf("central_privacy: the trial fusion returned %d components, want %d", len(out.Theta), d)
	}
	if err := checkWeightedMean(out, xs, c); err != nil {
		return fmt.Errorf("central_privacy: %w", err)
	}
	return nil
}

// fuseCentral fuses a round of a task with central privacy: clip, fuse
// (without demonstration counts), check the weighted mean (BoundMean) or
// clip the result (BoundOutput), add the noise. Under BoundMean a fusion
// that is not a weighted mean is a permanent failure of the round.
func (c *Coordinator) fuseCentral(spec TaskSpec, thetas [][]float64) (FuseOutput, *privacy.CentralRelease, error) {
	cp := *spec.CentralPrivacy
	clipped := make([][]float64, len(thetas))
	for i, th := range thetas {
		clipped[i] = privacy.Clip(nil, th, cp.Clip)
	}
	out, err := c.cfg.Fuser.Fuse(c.ctx, spec, clipped, make([]int, len(thetas)))
	if err != nil {
		return out, nil, err
	}
	if len(out.Theta) != spec.ThetaDim {
		return out, nil, fmt.Errorf("fuser returned %d components, want %d", len(out.Theta), spec.ThetaDim)
	}
	if cp.BoundName() == privacy.BoundOutput {
		out.Theta = privacy.Clip(nil, out.Theta, cp.Clip)
	} else if err := checkWeightedMean(out, clipped, cp.Clip); err != nil {
		return out, nil, fmt.Errorf("central privacy: %w", err)
	}
	rel, err := cp.Calibrate(spec.Rounds, out.Weights)
	if err != nil {
		return out, nil, fmt.Errorf("central privacy: %w", err)
	}
	theta := make([]float64, len(out.Theta))
	copy(theta, out.Theta)
	c.noiseMu.Lock()
	rel.AddNoise(theta, c.cfg.CentralNoise)
	c.noiseMu.Unlock()
	// Only the noised θ and what does not depend on the clients' data leave
	// the server: anything else a fuser reports about the clipped θ_i (e.g.
	// each client's distance to the un-noised mean) would bypass the noise.
	return FuseOutput{Theta: theta, Method: out.Method, Weights: out.Weights,
		MarginalError: out.MarginalError, Iterations: out.Iterations}, &rel, nil
}
