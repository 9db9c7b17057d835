package irl

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// bruteReward evaluates R(x,a,y) of r on any triple straight from the
// TransitionReward definition (only the next-state part from a terminal x).
func bruteReward(m *mdp.MDP, r TransitionReward, x, a, y int) float64 {
	if m.IsTerminal(x) {
		if r.NextState != nil {
			return r.NextState[y]
		}
		return 0
	}
	v := 0.0
	if r.StateAction != nil {
		v += r.StateAction[x*m.NumActions+a]
	}
	if r.NextState != nil {
		v += r.NextState[y]
	}
	if r.Transition != nil {
		next, _ := m.Successors(x, a)
		lo := m.RowPtr[x*m.NumActions+a]
		for j, n := range next {
			if int(n) == y {
				v += r.Transition[lo+j]
			}
		}
	}
	return v
}

// bruteEPIC computes EPIC by its definition: D_S from the weights, the
// canonicalized reward of every (s,a,s') by an explicit triple loop over
// the expectation E[γR(s',A,S') − R(s,A,S') − γR(S,A,S')], and the weighted
// Pearson correlation over all (s,a,s') with weight D_S(s)·(1/A)·P(s'|s,a)
// from a dense transition table. It returns the distance, ρ, and ρ from
// gonum's stat.Correlation on the same weighted samples.
func bruteEPIC(m *mdp.MDP, r1, r2 TransitionReward, w []float64) (dist, rho, rhoGonum float64) {
	d := make([]float64, m.NumStates)
	for s := range d {
		if !m.IsTerminal(s) {
			d[s] = 1
			if w != nil {
				d[s] = w[s]
			}
		}
	}
	rho, rhoGonum = brutePearson(m, r1, r2, d, false)
	return math.Sqrt((1 - rho) / 2), rho, rhoGonum
}

// brutePearson is the shared core of the brute-force EPIC references: d
// (unnormalized state weights, normalized here) is D_S of the
// canonicalization, every (s,a,s') is canonicalized by an explicit triple
// loop, and ρ is the Pearson correlation of the two canonical rewards over
// all (s,a,s') with weight D_S(s)·(1/A)·P(s'|s,a) from a dense transition
// table, or weight 1 with uniformPairs (evaluating-rewards' default). It
// returns ρ and gonum's stat.Correlation on the same weighted samples.
func brutePearson(m *mdp.MDP, r1, r2 TransitionReward, d []float64, uniformPairs bool) (rho, rhoGonum float64) {
	S, A, g := m.NumStates, m.NumActions, m.Gamma
	tot := 0.0
	for _, v := range d {
		tot += v
	}
	for s := range d {
		d[s] /= tot
	}
	canon := func(r TransitionReward, s, a, s2 int) float64 {
		e := 0.0
		for S1 := 0; S1 < S; S1++ {
			for A1 := 0; A1 < A; A1++ {
				for S2 := 0; S2 < S; S2++ {
					p := d[S1] * d[S2] / float64(A)
					e += p * (g*bruteReward(m, r, s2, A1, S2) - bruteReward(m, r, s, A1, S2) - g*bruteReward(m, r, S1, A1, S2))
				}
			}
		}
		return bruteReward(m, r, s, a, s2) + e
	}
	var x1, x2, wt []float64
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			P := make([]float64, S)
			next, prob := m.Successors(s, a)
			for j, n := range next {
				P[n] += prob[j]
			}
			for s2 := 0; s2 < S; s2++ {
				q := d[s] / float64(A) * P[s2]
				if uniformPairs {
					q = 1
				}
				if q > 0 {
					x1 = append(x1, canon(r1, s, a, s2))
					x2 = append(x2, canon(r2, s, a, s2))
					wt = append(wt, q)
				}
			}
		}
	}
	var mu1, mu2, sw float64
	for i := range wt {
		mu1 += wt[i] * x1[i]
		mu2 += wt[i] * x2[i]
		sw += wt[i]
	}
	mu1 /= sw
	mu2 /= sw
	var c12, v1, v2 float64
	for i := range wt {
		c12 += wt[i] * (x1[i] - mu1) * (x2[i] - mu2)
		v1 += wt[i] * (x1[i] - mu1) * (x1[i] - mu1)
		v2 += wt[i] * (x2[i] - mu2) * (x2[i] - mu2)
	}
	rho = c12 / math.Sqrt(v1*v2)
	return rho, stat.Correlation(x1, x2, wt)
}

// randomVec returns n draws from N(0,1).
func randomVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// randomTransitionReward draws all three parts of a TransitionReward on m.
func randomTransitionReward(rng *rand.Rand, m *mdp.MDP) TransitionReward {
	return TransitionReward{StateAction: randomVec(rng, m.NumPairs()), NextState: randomVec(rng, m.NumStates),
		Transition: randomVec(rng, len(m.Next))}
}

// randomWeights returns coverage weights of the given kind on m.
func randomWeights(rng *rand.Rand, m *mdp.MDP, kind string) []float64 {
	switch kind {
	case "uniform":
		return nil
	case "random": // including mass on terminal states, which EPIC must ignore
		w := make([]float64, m.NumStates)
		for s := range w {
			w[s] = 3 * rng.Float64()
		}
		return w
	case "sparse": // some non-terminal states never drawn as s
		w := make([]float64, m.NumStates)
		w[0] = 1
		for s := 1; s < m.NumStates; s++ {
			if rng.IntN(2) == 0 {
				w[s] = rng.Float64()
			}
		}
		return w
	}
	panic("unknown weights kind " + kind)
}

// TestEPICMatchesBruteForce compares EPIC and EPICTransitions with bruteEPIC
// on random small MDPs with a terminal state.
func TestEPICMatchesBruteForce(t *testing.T) {
	cases := []struct {
		name           string
		S, A, k, nTerm int
		gamma          float64
		weights        string
	}{
		{"3x2 uniform", 3, 2, 2, 1, 0.9, "uniform"},
		{"4x3 random weights", 4, 3, 2, 1, 0.5, "random"},
		{"5x2 sparse weights", 5, 2, 3, 1, 0.99, "sparse"},
		{"6x3 two terminals", 6, 3, 2, 2, 0.8, "random"},
		{"7x2 deterministic", 7, 2, 1, 1, 0.95, "uniform"},
		{"7x3 gamma 0", 7, 3, 3, 1, 0, "random"},
		{"5x2 no terminal", 5, 2, 2, 0, 0.9, "random"},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(0); seed < 5; seed++ {
				m := mdptest.RandomMDP(1000*uint64(ci)+seed, c.S, c.A, c.k, c.nTerm, c.gamma, 0)
				rng := rand.New(rand.NewPCG(seed, uint64(ci)))
				o := EPICOptions{StateWeights: randomWeights(rng, m, c.weights)}

				r1, r2 := randomVec(rng, m.NumPairs()), randomVec(rng, m.NumPairs())
				got, err := EPIC(m, r1, r2, o)
				if err != nil {
					t.Fatal(err)
				}
				dist, rho, rhoG := bruteEPIC(m, TransitionReward{StateAction: r1}, TransitionReward{StateAction: r2}, o.StateWeights)
				approx.Equal(t, "state-action ρ (brute vs gonum)", rho, rhoG, 1e-12, 0)
				approx.Equal(t, "state-action distance", got.Distance, dist, 1e-12, 0)
				approx.Equal(t, "state-action ρ", got.Pearson, rho, 1e-12, 0)

				t1, t2 := randomTransitionReward(rng, m), randomTransitionReward(rng, m)
				got, err = EPICTransitions(m, t1, t2, o)
				if err != nil {
					t.Fatal(err)
				}
				dist, rho, _ = bruteEPIC(m, t1, t2, o.StateWeights)
				approx.Equal(t, "transition distance", got.Distance, dist, 1e-12, 0)
				approx.Equal(t, "transition ρ", got.Pearson, rho, 1e-12, 0)
			}
		})
	}
}

// shape returns r + γΦ(s') − Φ(s) as a TransitionReward.
func shape(m *mdp.MDP, r TransitionReward, phi []float64) TransitionReward {
	out := TransitionReward{StateAction: make([]float64, m.NumPairs()), NextState: make([]float64, m.NumStates),
		Transition: r.Transition}
	for k := range out.StateAction {
		if r.StateAction != nil {
			out.StateAction[k] = r.StateAction[k]
		}
		out.StateAction[k] -= phi[k/m.NumActions]
	}
	for y := range out.NextState {
		if r.NextState != nil {
			out.NextState[y] = r.NextState[y]
		}
		out.NextState[y] += m.Gamma * phi[y]
	}
	return out
}

// TestEPICShapingInvariance checks that potential shaping with Φ(terminal) = 0
// leaves the distance at 0, and (so the check can fail) that shaping with a
// non-zero terminal potential, or the "expected" shaping r + γPΦ − Φ of a
// state–action reward, does not.
func TestEPICShapingInvariance(t *testing.T) {
	cases := []struct {
		name           string
		S, A, k, nTerm int
		gamma          float64
		weights        string
		stateAction    bool // shape a state–action reward instead of a full transition reward
	}{
		{"state-action 5x2", 5, 2, 2, 1, 0.9, "uniform", true},
		{"state-action 7x3 weighted", 7, 3, 3, 1, 0.99, "random", true},
		{"transition 6x2", 6, 2, 2, 1, 0.8, "sparse", false},
		{"transition 7x3 two terminals", 7, 3, 2, 2, 0.95, "random", false},
		{"transition no terminal", 4, 3, 2, 0, 0.9, "uniform", false},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(0); seed < 5; seed++ {
				m := mdptest.RandomMDP(2000*uint64(ci)+seed, c.S, c.A, c.k, c.nTerm, c.gamma, 0)
				rng := rand.New(rand.NewPCG(seed, 7))
				o := EPICOptions{StateWeights: randomWeights(rng, m, c.weights)}
				r := randomTransitionReward(rng, m)
				if c.stateAction {
					r = TransitionReward{StateAction: r.StateAction}
				}
				phi := randomVec(rng, m.NumStates)
				for s := range phi {
					phi[s] *= 10
					if m.IsTerminal(s) {
						phi[s] = 0
					}
				}
				res, err := EPICTransitions(m, r, shape(m, r, phi), o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Distance > 1e-9 || res.Pearson < 1-1e-12 {
					t.Fatalf("seed %d: shaped reward at distance %.3g (ρ = %.17g), want 0", seed, res.Distance, res.Pearson)
				}
				if c.nTerm > 0 && terminalReachable(m, o.StateWeights) {
					// Φ(terminal) ≠ 0 is not a shaping of an episodic MDP.
					for s := range phi {
						if m.IsTerminal(s) {
							phi[s] = 10
						}
					}
					if res, err = EPICTransitions(m, r, shape(m, r, phi), o); err != nil {
						t.Fatal(err)
					}
					if res.Distance < 1e-3 {
						t.Fatalf("seed %d: shaping with Φ(terminal) = 10 at distance %.3g, want > 0", seed, res.Distance)
					}
				}
				if c.stateAction {
					// Folding the shaping into r(s,a) = E_s' R(s,a,s') changes R off the support.
					rs := make([]float64, m.NumPairs())
					for k := range rs {
						next, prob := m.Successors(k/m.NumActions, k%m.NumActions)
						rs[k] = r.StateAction[k] - phi[k/m.NumActions]
						for j, n := range next {
							rs[k] += m.Gamma * prob[j] * phi[n]
						}
					}
					if res, err = EPIC(m, r.StateAction, rs, o); err != nil {
						t.Fatal(err)
					}
					if res.Distance < 1e-3 {
						t.Fatalf("seed %d: expected shaping at distance %.3g, want > 0", seed, res.Distance)
					}
				}
			}
		})
	}
}

// terminalReachable reports whether a covered non-terminal state moves to a
// terminal one with positive probability in one step.
func terminalReachable(m *mdp.MDP, w []float64) bool {
	for s := 0; s < m.NumStates; s++ {
		if m.IsTerminal(s) || (w != nil && w[s] == 0) {
			continue
		}
		for a := 0; a < m.NumActions; a++ {
			next, prob := m.Successors(s, a)
			for j, n := range next {
				if m.IsTerminal(int(n)) && prob[j] > 0 {
					return true
				}
			}
		}
	}
	return false
}

// chainMDP is a 4-state chain 0 → 1 → 2 → 3 with a "stay" action; state 3 is
// terminal when episodic (else it loops back to 0).
func chainMDP(t *testing.T, episodic bool) *mdp.MDP {
	b := mdp.NewBuilder(4, 2)
	b.Gamma = 0.9
	if episodic {
		b.SetTerminal(3)
	}
	for s := 0; s < 4; s++ {
		b.AddTransition(s, 0, s, 1)
		b.AddTransition(s, 1, (s+1)%4, 1)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEPICScalingAndShift checks the distance of affine transforms of a reward.
func TestEPICScalingAndShift(t *testing.T) {
	cases := []struct {
		name         string
		episodic     bool
		scale, shift float64
		want         float64 // -1: want a distance clearly above 0
	}{
		{"scale 3", true, 3, 0, 0},
		{"scale 1e-3", true, 1e-3, 0, 0},
		{"scale -2", true, -2, 0, 1},
		{"scale -1 no terminal", false, -1, 0, 1},
		// A constant shift c of every non-terminal reward is the shaping
		// Φ ≡ −c/(1−γ) only if Φ may be non-zero at terminal states; with
		// Φ(terminal) fixed at 0 it changes the reward of ending the episode
		// relative to continuing (a survival bonus), which EPIC must see.
		{"shift +5 with terminal", true, 1, 5, -1},
		{"shift -5 with terminal", true, 1, -5, -1},
		{"shift +5 no terminal", false, 1, 5, 0},
		{"scale 2 shift -7 no terminal", false, 2, -7, 0},
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := chainMDP(t, c.episodic)
			r := randomVec(rng, m.NumPairs())
			r2 := make([]float64, len(r))
			for k := range r {
				r2[k] = c.scale*r[k] + c.shift
				if m.IsTerminal(k / m.NumActions) {
					r2[k] = math.NaN() // terminal rows are ignored
				}
			}
			res, err := EPIC(m, r, r2, EPICOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.want < 0 {
				if res.Distance < 1e-2 {
					t.Fatalf("distance %.3g, want > 0", res.Distance)
				}
				return
			}
			approx.Equal(t, "distance", res.Distance, c.want, 1e-9, 0)
			approx.Equal(t, "ρ", res.Pearson, 1-2*c.want, 1e-12, 0)
		})
	}
}

// TestEPICPseudometric checks symmetry, d(a,a) = 0, and the triangle
// inequality on random triples, some of them nearly collinear.
func TestEPICPseudometric(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for trial := 0; trial < 40; trial++ {
		m := mdptest.RandomMDP(uint64(3000+trial), 3+trial%5, 2+trial%2, 2, 1, 0.9, 0)
		o := EPICOptions{StateWeights: randomWeights(rng, m, []string{"uniform", "random", "sparse"}[trial%3])}
		a, b := randomVec(rng, m.NumPairs()), randomVec(rng, m.NumPairs())
		c := make([]float64, len(a))
		for k := range c {
			switch trial % 3 {
			case 0: // independent
				c[k] = rng.NormFloat64()
			case 1: // b nearly between a and c
				c[k] = 2*b[k] - a[k] + 1e-3*rng.NormFloat64()
			default: // c close to a
				c[k] = a[k] + 0.05*rng.NormFloat64()
			}
		}
		d := func(x, y []float64) float64 {
			res, err := EPIC(m, x, y, o)
			if err != nil {
				t.Fatal(err)
			}
			return res.Distance
		}
		if dab, dba := d(a, b), d(b, a); math.Abs(dab-dba) > 1e-15 {
			t.Fatalf("trial %d: d(a,b) = %.17g, d(b,a) = %.17g", trial, dab, dba)
		}
		if daa := d(a, a); daa != 0 {
			t.Fatalf("trial %d: d(a,a) = %g", trial, daa)
		}
		for _, tri := range [][3][]float64{{a, b, c}, {b, a, c}, {a, c, b}} {
			x, y, z := tri[0], tri[1], tri[2]
			if dxz, dxy, dyz := d(x, z), d(x, y), d(y, z); dxz > dxy+dyz+1e-12 {
				t.Fatalf("trial %d: triangle inequality fails: %.17g > %.17g + %.17g", trial, dxz, dxy, dyz)
			}
		}
	}
}

// TestEPICErrors checks that bad input gets an error naming what is wrong.
func TestEPICErrors(t *testing.T) {
	episodic, loop := chainMDP(t, true), chainMDP(t, false)
	good := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	withNaN := append([]float64(nil), good...)
	withNaN[2] = math.NaN()
	constant := []float64{2, 2, 2, 2, 2, 2, 2, 2}
	dup := &mdp.MDP{NumStates: 2, NumActions: 1, RowPtr: []int{0, 2, 3}, Next: []int32{1, 1, 0}, Prob: []float64{0.5, 0.5, 1},
		Gamma: 0.9, Init: []float64{1, 0}}
	cases := []struct {
		name   string
		m      *mdp.MDP
		r1, r2 TransitionReward
		o      EPICOptions
		want   string
	}{
		{"r1 short", episodic, TransitionReward{StateAction: good[:7]}, TransitionReward{StateAction: good}, EPICOptions{}, "r1 state-action part has 7 entries, want 8"},
		{"r2 NaN", episodic, TransitionReward{StateAction: good}, TransitionReward{StateAction: withNaN}, EPICOptions{}, "r2 entry 2 (state 1, action 0) = NaN is not finite"},
		{"r1 constant", loop, TransitionReward{StateAction: constant}, TransitionReward{StateAction: good}, EPICOptions{}, "r1 is constant after canonicalization"},
		{"r2 zero", episodic, TransitionReward{StateAction: good}, TransitionReward{}, EPICOptions{}, "r2 is constant after canonicalization"},
		{"next-state Inf", episodic, TransitionReward{StateAction: good, NextState: []float64{0, math.Inf(1), 0, 0}}, TransitionReward{StateAction: good}, EPICOptions{}, "r1 next-state part: entry 1 (state 1) = +Inf"},
		{"weights length", episodic, TransitionReward{StateAction: good}, TransitionReward{StateAction: constant}, EPICOptions{StateWeights: []float64{1, 1}}, "state weights have 2 entries, want 4 states"},
		{"weights negative", episodic, TransitionReward{StateAction: good}, TransitionReward{StateAction: constant}, EPICOptions{StateWeights: []float64{1, -1, 1, 1}}, "state weight 1 = -1"},
		{"weights only on terminal", episodic, TransitionReward{StateAction: good}, TransitionReward{StateAction: constant}, EPICOptions{StateWeights: []float64{0, 0, 0, 1}}, "no finite positive mass on non-terminal states"},
		{"duplicate successor", dup, TransitionReward{Transition: []float64{1, 2, 3}}, TransitionReward{StateAction: []float64{1, 2}}, EPICOptions{}, "state 0 action 0 lists next state 1 twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := EPICTransitions(c.m, c.r1, c.r2, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
			if strings.Contains(c.want, "constant") && !errors.Is(err, ErrConstantReward) {
				t.Fatalf("error %v does not wrap ErrConstantReward", err)
			}
		})
	}
	// The same through EPIC, which names the state–action vector by its length.
	if _, err := EPIC(episodic, good, good[:3], EPICOptions{}); err == nil || !strings.Contains(err.Error(), "r2 has 3 entries, want S*A = 4*2 = 8") {
		t.Fatalf("error = %v", err)
	}
	// A constant reward with termination is a survival bonus, not constant after canonicalization.
	if _, err := EPIC(episodic, constant, good, EPICOptions{}); err != nil {
		t.Fatalf("constant reward on an episodic MDP: %v", err)
	}
}

// BenchmarkEPIC_Banded1e5x4x8 measures EPIC on a lattice-sized sparse MDP
// (10⁵ states, 4 actions, 8 successors per pair: 3.2·10⁶ transitions), the
// scale of the control study's fine lattices.
func BenchmarkEPIC_Banded1e5x4x8(b *testing.B) {
	m := mdptest.BandedMDP(100000, 4, 8, 0.99)
	rng := rand.New(rand.NewPCG(1, 1))
	r1, r2 := randomVec(rng, m.NumPairs()), randomVec(rng, m.NumPairs())
	for b.Loop() {
		if _, err := EPIC(m, r1, r2, EPICOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(m.Next))*float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
}
