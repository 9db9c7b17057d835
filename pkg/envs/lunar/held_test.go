package lunar

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/features"
)

// shapingPotential is Gymnasium's shaping potential of an observation.
func shapingPotential(s []float64) float64 {
	return -100*math.Hypot(s[0], s[1]) - 100*math.Hypot(s[2], s[3]) - 100*math.Abs(s[4]) + 10*s[6] + 10*s[7]
}

// TestLanderThrottlesAreTheFuelCost: on every frame of episodes under
// random actions (wind on, client 3), the reward less the change of the
// shaping potential between the observations is exactly the fuel cost
// −0.30·main − 0.03·|side| of features.LanderThrottles (up to the
// observations' float32 rounding), until the episode ends.
func TestLanderThrottlesAreTheFuelCost(t *testing.T) {
	e, err := New(ClientParams(true, 3))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	frames := 0
	for ep := range 5 {
		s := append([]float64(nil), e.Reset(uint64(ep))...)
		for {
			a := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
			if rng.IntN(4) == 0 { // the lattice's levels too
				a = []float64{float64(rng.IntN(3) - 1), float64(rng.IntN(3) - 1)}
			}
			obs, r, term, trunc := e.Step(a)
			if term || trunc {
				break
			}
			m, sd := features.LanderThrottles(a[0], a[1])
			fuel := r - (shapingPotential(obs) - shapingPotential(s))
			if want := -0.30*m - 0.03*math.Abs(sd); math.Abs(fuel-want) > 1e-4 {
				t.Fatalf("episode %d frame action %v: reward − ΔΦ = %v, the throttles' fuel cost %v", ep, a, fuel, want)
			}
			copy(s, obs)
			frames++
		}
	}
	if frames < 200 {
		t.Fatalf("only %d frames checked", frames)
	}
}

// TestPredictLanderBeatsStandingStill: on held steps of 8 frames recorded
// from the simulator (Gymnasium's heuristic, a uniform random action 3
// times in 10, wind on, clients 0 and 4, 10 episodes each), while the lander flies (no leg
// contact before or after), the nominal prediction of the next
// observation's (x, y, ẋ, ẏ, angle, angular velocity) is closer to the
// recorded one than the current observation is, on average and on at
// least 90 % of the steps; and the held features with the potential's
// weights (−100 on each term's change, −0.30·8 and −0.03·8 on the
// throttles) explain most of the held step's reward (R² ≥ 0.9).
func TestPredictLanderBeatsStandingStill(t *testing.T) {
	const frames = 8
	spec := &features.RBFSpec{Axes: make([]features.RBFAxis, 10), HeldLander: &features.HeldLander{Frames: frames, Terms: features.HeldLanderTerms[:8]}}
	for k := range spec.Axes {
		spec.Axes[k] = features.RBFAxis{Centres: []float64{0}, Categorical: true}
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	theta := []float64{0, -100, -100, -100, -0.30 * frames, -0.03 * frames, 0, 0, 0}
	rng := rand.New(rand.NewPCG(7, 8))
	var n, closer int
	var errPred, errStill float64
	var rewards, fitted []float64
	for _, client := range []int{0, 4} {
		e, err := New(ClientParams(true, client))
		if err != nil {
			t.Fatal(err)
		}
		for ep := range 10 {
			s := append([]float64(nil), e.Reset(uint64(100*client+ep))...)
			done := false
			for !done {
				a := Heuristic(make([]float64, 2), s, true)
				if rng.Float64() < 0.3 {
					a = []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
				}
				var obs []float64
				r := 0.0
				for range frames {
					var fr float64
					var term, trunc bool
					obs, fr, term, trunc = e.Step(a)
					r += fr
					if term || trunc {
						done = true
						break
					}
				}
				if !done && s[6]+s[7]+obs[6]+obs[7] == 0 {
					var p [6]float64
					features.PredictLander(p[:], s, a[0], a[1], frames)
					dp, ds := 0.0, 0.0
					for k := range p {
						dp += (p[k] - obs[k]) * (p[k] - obs[k])
						ds += (s[k] - obs[k]) * (s[k] - obs[k])
					}
					errPred += math.Sqrt(dp)
					errStill += math.Sqrt(ds)
					if dp < ds {
						closer++
					}
					n++
					rewards = append(rewards, r)
					fitted = append(fitted, spec.Reward(theta, append(append([]float64(nil), s...), a...)))
				}
				copy(s, obs)
			}
		}
	}
	if n < 300 {
		t.Fatalf("only %d flying held steps recorded", n)
	}
	if errPred >= errStill || float64(closer) < 0.9*float64(n) {
		t.Errorf("%d held steps: mean error of the prediction %.4g, of the current observation %.4g; the prediction closer on %d", n, errPred/float64(n), errStill/float64(n), closer)
	}
	var mean, ssTot, ssRes float64
	for _, r := range rewards {
		mean += r / float64(len(rewards))
	}
	for i, r := range rewards {
		ssTot += (r - mean) * (r - mean)
		ssRes += (r - fitted[i]) * (r - fitted[i])
	}
	if r2 := 1 - ssRes/ssTot; r2 < 0.9 {
		t.Errorf("%d held steps: R² of the held features with the potential's weights %.3f, want ≥ 0.9", n, r2)
	} else {
		t.Logf("%d held steps: prediction error %.4g against %.4g standing still, closer on %d; R² %.4f", n, errPred/float64(n), errStill/float64(n), closer, r2)
	}
}
