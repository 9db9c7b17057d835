package mdp_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
)

func randomReward(seed uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	return r
}

func TestBuilderErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *mdp.Builder)
		want  string
	}{
		{"sum below one", func(b *mdp.Builder) {
			b.AddTransition(0, 0, 1, 1)
			b.AddTransition(0, 1, 1, 1)
			b.AddTransition(1, 0, 0, 0.5)
			b.AddTransition(1, 1, 0, 1)
		}, "state 1 action 0: transition probabilities sum to 0.5"},
		{"missing row", func(b *mdp.Builder) {
			b.AddTransition(0, 0, 1, 1)
			b.AddTransition(1, 0, 0, 1)
			b.AddTransition(1, 1, 0, 1)
		}, "state 0 action 1: transition probabilities sum to 0"},
		{"bad state", func(b *mdp.Builder) { b.AddTransition(2, 0, 0, 1) }, "state 2 out of range"},
		{"bad action", func(b *mdp.Builder) { b.AddTransition(0, -1, 0, 1) }, "action -1 out of range"},
		{"bad next", func(b *mdp.Builder) { b.AddTransition(0, 0, 5, 1) }, "next state 5 out of range"},
		{"bad prob", func(b *mdp.Builder) { b.AddTransition(0, 0, 1, 1.5) }, "probability 1.5 not in [0,1]"},
		{"nan prob", func(b *mdp.Builder) { b.AddTransition(0, 0, 1, math.NaN()) }, "probability NaN"},
		{"bad gamma", func(b *mdp.Builder) {
			b.Gamma = 1
			for s := 0; s < 2; s++ {
				for a := 0; a < 2; a++ {
					b.AddTransition(s, a, 0, 1)
				}
			}
		}, "gamma = 1 needs a finite horizon"},
		{"bad terminal", func(b *mdp.Builder) { b.SetTerminal(7) }, "terminal state 7 out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mdp.NewBuilder(2, 2)
			b.Gamma = 0.9
			c.build(b)
			_, err := b.Build()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Build error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestBuilderMergesAndNormalizes(t *testing.T) {
	b := mdp.NewBuilder(2, 1)
	b.Gamma = 0.5
	b.AddTransition(0, 0, 1, 0.25)
	b.AddTransition(0, 0, 0, 0.5)
	b.AddTransition(0, 0, 1, 0.25)
	b.AddTransition(1, 0, 1, 1)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	next, prob := m.Successors(0, 0)
	if len(next) != 2 || next[0] != 0 || next[1] != 1 {
		t.Fatalf("successors %v, want [0 1]", next)
	}
	approx.Slices(t, "prob", prob, []float64{0.5, 0.5}, 0, 1e-15)
	approx.Slices(t, "init", m.Init, []float64{0.5, 0.5}, 0, 1e-15)
}

// densePolicyValue solves (I − γ P_π) V = r_π densely for a stationary policy (terminal rows V = 0).
func densePolicyValue(m *mdp.MDP, r []float64, pi []float64) []float64 {
	S, A := m.NumStates, m.NumActions
	lhs := mat.NewDense(S, S, nil)
	rhs := mat.NewVecDense(S, nil)
	for s := 0; s < S; s++ {
		lhs.Set(s, s, 1)
		if m.IsTerminal(s) {
			continue
		}
		for a := 0; a < A; a++ {
			p := pi[s*A+a]
			rhs.SetVec(s, rhs.AtVec(s)+p*r[s*A+a])
			next, prob := m.Successors(s, a)
			for i, n := range next {
				lhs.Set(s, int(n), lhs.At(s, int(n))-m.Gamma*p*prob[i])
			}
		}
	}
	var v mat.VecDense
	if err := v.SolveVec(lhs, rhs); err != nil {
		panic(err)
	}
	return v.RawVector().Data
}

// TestValueIterationBruteForce compares value iteration with the best of all deterministic policies.
func TestValueIterationBruteForce(t *testing.T) {
	cases := []struct {
		S, A, k, nTerm int
		gamma          float64
	}{
		{3, 2, 2, 0, 0.9},
		{4, 3, 2, 1, 0.95},
		{5, 2, 3, 1, 0.7},
		{4, 2, 1, 0, 0.99},
	}
	for ci, c := range cases {
		m := mdptest.RandomMDP(uint64(ci), c.S, c.A, c.k, c.nTerm, c.gamma, 0)
		r := randomReward(uint64(ci), m.NumPairs())
		ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13})
		v := ws.ValueIteration(nil, r)
		if !v.Converged {
			t.Fatalf("case %d: not converged, residual %g", ci, v.Residual)
		}
		best := make([]float64, c.S)
		for i := range best {
			best[i] = math.Inf(-1)
		}
		nPol := int(math.Pow(float64(c.A), float64(c.S)))
		pi := make([]float64, m.NumPairs())
		for code := 0; code < nPol; code++ {
			clear(pi)
			x := code
			for s := 0; s < c.S; s++ {
				pi[s*c.A+x%c.A] = 1
				x /= c.A
			}
			vp := densePolicyValue(m, r, pi)
			for s := range best {
				best[s] = max(best[s], vp[s])
			}
		}
		approx.Slices(t, "V* vs brute force", v.V, best, 1e-9, 1e-9)
		// The greedy policy evaluates to V*.
		greedy := ws.SoftPolicy(nil, v, 0)
		pe := ws.PolicyEvaluation(nil, r, greedy)
		approx.Slices(t, "V^greedy", pe.V, best, 1e-9, 1e-9)
	}
}

// expectimax computes the optimal finite-horizon value by plain recursion.
func expectimax(m *mdp.MDP, r []float64, s, stepsLeft int, disc float64) float64 {
	if stepsLeft == 0 || m.IsTerminal(s) {
		return 0
	}
	best := math.Inf(-1)
	for a := 0; a < m.NumActions; a++ {
		q := r[s*m.NumActions+a]
		next, prob := m.Successors(s, a)
		for i, n := range next {
			q += disc * prob[i] * expectimax(m, r, int(n), stepsLeft-1, disc)
		}
		best = max(best, q)
	}
	return best
}

func TestFiniteHorizonValueIteration(t *testing.T) {
	for ci, T := range []int{1, 2, 5} {
		m := mdptest.RandomMDP(uint64(10+ci), 4, 2, 2, 1, 0.9, T)
		r := randomReward(uint64(10+ci), m.NumPairs())
		ws := mdp.NewWorkspace(m, mdp.Options{})
		v := ws.ValueIteration(nil, r)
		for tt := 0; tt <= T; tt++ {
			for s := 0; s < m.NumStates; s++ {
				approx.Equal(t, "V_t(s)", v.V[tt*m.NumStates+s], expectimax(m, r, s, T-tt, m.Gamma), 1e-12, 1e-12)
			}
		}
	}
}

// TestSoftValueIsEntropyRegularizedReturn checks V_soft = V^π for the reward r − τ log π (π the soft policy).
func TestSoftValueIsEntropyRegularizedReturn(t *testing.T) {
	for ci, c := range []struct {
		tau     float64
		horizon int
	}{{1, 0}, {0.3, 0}, {1e-3, 0}, {0.5, 6}} {
		m := mdptest.RandomMDP(uint64(20+ci), 8, 3, 3, 1, 0.9, c.horizon)
		r := randomReward(uint64(20+ci), m.NumPairs())
		ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13})
		v := ws.SoftValueIteration(nil, r, c.tau)
		pi := ws.SoftPolicy(nil, v, c.tau)
		if c.horizon > 0 {
			// Time-indexed: check the time-0 values by rolling the regularized reward into a stationary test.
			for tt := 0; tt < c.horizon; tt++ {
				for s := 0; s < m.NumStates; s++ {
					sum := 0.0
					for _, p := range pi.At(tt, s) {
						sum += p
					}
					approx.Equal(t, "policy mass", sum, 1, 1e-12, 0)
				}
			}
			continue
		}
		reg := make([]float64, len(r))
		for s := 0; s < m.NumStates; s++ {
			for a := 0; a < m.NumActions; a++ {
				k := s*m.NumActions + a
				if p := pi.Prob[k]; p > 0 {
					reg[k] = r[k] - c.tau*math.Log(p)
				}
			}
		}
		pe := ws.PolicyEvaluation(nil, reg, pi)
		approx.Slices(t, "V_soft vs entropy-regularized V^π", v.V, pe.V, 1e-8, 1e-8)
		if c.tau <= 1e-3 {
			hard := ws.ValueIteration(nil, r)
			bound := c.tau * math.Log(float64(m.NumActions)) / (1 - m.Gamma)
			for s := range hard.V {
				if d := v.V[s] - hard.V[s]; d < -1e-9 || d > bound+1e-9 {
					t.Fatalf("soft - hard value at %d = %g, want in [0, %g]", s, d, bound)
				}
			}
		}
	}
}

// denseVisits solves d_s = init + γ P_π^T d_s and returns d(s,a) = d_s(s)π(a|s).
func denseVisits(m *mdp.MDP, pi []float64) []float64 {
	S, A := m.NumStates, m.NumActions
	lhs := mat.NewDense(S, S, nil)
	for s := 0; s < S; s++ {
		lhs.Set(s, s, 1)
		if m.IsTerminal(s) {
			continue
		}
		for a := 0; a < A; a++ {
			next, prob := m.Successors(s, a)
			for i, n := range next {
				lhs.Set(int(n), s, lhs.At(int(n), s)-m.Gamma*pi[s*A+a]*prob[i])
			}
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(lhs, mat.NewVecDense(S, append([]float64(nil), m.Init...))); err != nil {
		panic(err)
	}
	d := make([]float64, S*A)
	for s := 0; s < S; s++ {
		if m.IsTerminal(s) {
			continue
		}
		for a := 0; a < A; a++ {
			d[s*A+a] = x.AtVec(s) * pi[s*A+a]
		}
	}
	return d
}

// monteCarloVisits estimates d(s,a) and its standard error from n rollouts.
func monteCarloVisits(m *mdp.MDP, pi *mdp.Policy, n int, seed uint64) (mean, se []float64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	SA := m.NumPairs()
	sum, sum2, cur := make([]float64, SA), make([]float64, SA), make([]float64, SA)
	maxSteps := 0
	if m.Horizon == 0 {
		maxSteps = int(math.Ceil(math.Log(1e-6) / math.Log(m.Gamma)))
	}
	for i := 0; i < n; i++ {
		clear(cur)
		states, actions := m.Rollout(rng, pi, maxSteps)
		g := 1.0
		for t, a := range actions {
			cur[states[t]*m.NumActions+a] += g
			g *= m.Gamma
		}
		for k, c := range cur {
			sum[k] += c
			sum2[k] += c * c
		}
	}
	mean, se = make([]float64, SA), make([]float64, SA)
	for k := range sum {
		mean[k] = sum[k] / float64(n)
		se[k] = math.Sqrt(max(0, sum2[k]/float64(n)-mean[k]*mean[k]) / float64(n))
	}
	return mean, se
}

func TestOccupancy(t *testing.T) {
	cases := []struct {
		name           string
		S, A, k, nTerm int
		gamma          float64
		horizon        int
		tau            float64
	}{
		{"no terminal", 6, 3, 2, 0, 0.9, 0, 0.5},
		{"terminal", 6, 2, 3, 1, 0.8, 0, 1},
		{"finite horizon", 5, 2, 2, 1, 0.95, 8, 0.7},
		{"finite horizon gamma 1", 5, 3, 2, 0, 1, 4, 1},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mdptest.RandomMDP(uint64(30+ci), c.S, c.A, c.k, c.nTerm, c.gamma, c.horizon)
			r := randomReward(uint64(30+ci), m.NumPairs())
			ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13})
			v := ws.SoftValueIteration(nil, r, c.tau)
			pi := ws.SoftPolicy(nil, v, c.tau)
			d := ws.Visits(nil, pi, nil)
			rho := ws.Occupancy(nil, pi)
			sum := 0.0
			for _, x := range rho {
				sum += x
			}
			approx.Equal(t, "sum of occupancy", sum, 1, 1e-12, 0)
			if c.horizon == 0 {
				approx.Slices(t, "visits vs dense solve", d, denseVisits(m, pi.Prob), 1e-10, 1e-9)
				if c.nTerm == 0 {
					for k := range d {
						approx.Equal(t, "rho = (1-γ) d", rho[k], (1-m.Gamma)*d[k], 1e-12, 1e-9)
					}
				}
			}
			// ⟨d, r⟩ equals the policy-evaluation value from Init.
			pe := ws.PolicyEvaluation(nil, r, pi)
			j0 := 0.0
			for s, p := range m.Init {
				j0 += p * pe.Start()[s]
			}
			approx.Equal(t, "return via visits", ws.Return(pi, r), j0, 1e-9, 1e-9)
			// Monte Carlo: every entry within 5 standard errors (+ small slack for truncation).
			mc, se := monteCarloVisits(m, pi, 20000, uint64(ci))
			for k := range d {
				if math.Abs(mc[k]-d[k]) > 5*se[k]+1e-4 {
					t.Fatalf("pair %d: Monte Carlo %g ± %g, exact %g", k, mc[k], se[k], d[k])
				}
			}
		})
	}
}

// TestWorkersDeterministic: values and visits are bit-identical with 1, 2
// and 3 goroutines, for the fixed-point and the Newton solver.
func TestWorkersDeterministic(t *testing.T) {
	for _, newton := range []bool{false, true} {
		t.Run(fmt.Sprintf("newton=%v", newton), func(t *testing.T) { testWorkersDeterministic(t, newton) })
	}
}

func testWorkersDeterministic(t *testing.T, newton bool) {
	m := mdptest.RandomMDP(40, 6000, 4, 5, 10, 0.95, 0)
	r := randomReward(40, m.NumPairs())
	var vs [][]float64
	var ds [][]float64
	for _, w := range []int{1, 2, 3} {
		ws := mdp.NewWorkspace(m, mdp.Options{Workers: w, Newton: newton})
		if w > 1 && ws.Workers() != w {
			t.Fatalf("workers = %d, want %d", ws.Workers(), w)
		}
		v := ws.SoftValueIteration(nil, r, 0.1)
		pi := ws.SoftPolicy(nil, v, 0.1)
		vs = append(vs, v.V)
		ds = append(ds, ws.Visits(nil, pi, nil))
		ws.Close()
	}
	for i := 1; i < len(vs); i++ {
		for s := range vs[0] {
			if vs[i][s] != vs[0][s] {
				t.Fatalf("V differs between worker counts at state %d: %v vs %v", s, vs[i][s], vs[0][s])
			}
		}
		for k := range ds[0] {
			if ds[i][k] != ds[0][k] {
				t.Fatalf("visits differ between worker counts at pair %d", k)
			}
		}
	}
}

func TestWarmStartAgrees(t *testing.T) {
	m := mdptest.RandomMDP(41, 50, 3, 3, 2, 0.95, 0)
	r := randomReward(41, m.NumPairs())
	cold := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-12})
	warm := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-12, WarmStart: true})
	vw := warm.SoftValueIteration(nil, r, 0.5)
	for i := range r {
		r[i] += 0.01
	}
	vc := cold.SoftValueIteration(nil, r, 0.5)
	vw = warm.SoftValueIteration(vw, r, 0.5)
	if vw.Iterations >= vc.Iterations {
		t.Fatalf("warm start took %d sweeps, cold %d", vw.Iterations, vc.Iterations)
	}
	approx.Slices(t, "warm vs cold", vw.V, vc.V, 1e-9, 0)
}

func TestSweepAllocatesNothing(t *testing.T) {
	m := mdptest.RandomMDP(42, 3000, 5, 4, 0, 0.9, 0)
	r := randomReward(42, m.NumPairs())
	for _, opts := range []mdp.Options{{MaxIter: 1, Workers: 2}, {MaxIter: 3, Workers: 2, Newton: true}} {
		ws := mdp.NewWorkspace(m, opts)
		v := ws.SoftValueIteration(nil, r, 0.1)
		pi := ws.SoftPolicy(nil, v, 0.1)
		d := ws.Visits(nil, pi, nil)
		allocs := testing.AllocsPerRun(20, func() {
			v = ws.SoftValueIteration(v, r, 0.1)
			pi = ws.SoftPolicy(pi, v, 0.1)
			d = ws.Visits(d, pi, nil)
		})
		if allocs != 0 {
			t.Fatalf("Newton %v: %v allocations per call, want 0", opts.Newton, allocs)
		}
	}
}

func TestRolloutDeterministic(t *testing.T) {
	m := mdptest.RandomMDP(43, 10, 2, 2, 1, 0.9, 0)
	pi := mdp.NewPolicy(m)
	a1, b1 := m.Rollout(rand.New(rand.NewPCG(7, 7)), pi, 50)
	a2, b2 := m.Rollout(rand.New(rand.NewPCG(7, 7)), pi, 50)
	if len(a1) != len(b1)+1 || len(a1) != len(a2) {
		t.Fatalf("rollout lengths %d/%d vs %d", len(a1), len(b1), len(a2))
	}
	for i := range b1 {
		if a1[i] != a2[i] || b1[i] != b2[i] {
			t.Fatalf("rollouts differ at step %d", i)
		}
	}
}

// TestAndersonMatchesPlain checks the accelerated iterations against plain
// fixed-point iteration on values (hard and soft) and visits.
func TestAndersonMatchesPlain(t *testing.T) {
	cases := []struct {
		S, A, k, nTerm int
		gamma, tau     float64
	}{
		{200, 4, 5, 0, 0.99, 1e-3},
		{200, 4, 5, 3, 0.99, 0},
		{100, 3, 2, 0, 0.999, 0.5},
		{100, 5, 3, 5, 0.95, 1},
	}
	for ci, c := range cases {
		m := mdptest.RandomMDP(uint64(50+ci), c.S, c.A, c.k, c.nTerm, c.gamma, 0)
		r := randomReward(uint64(50+ci), m.NumPairs())
		plain := mdp.NewWorkspace(m, mdp.Options{Anderson: -1, Tol: 1e-11, MaxIter: 1 << 20})
		fast := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-11})
		vp := plain.SoftValueIteration(nil, r, c.tau)
		vf := fast.SoftValueIteration(nil, r, c.tau)
		if !vp.Converged || !vf.Converged {
			t.Fatalf("case %d: converged plain %v (%d sweeps) accelerated %v (%d sweeps)", ci, vp.Converged, vp.Iterations, vf.Converged, vf.Iterations)
		}
		bound := 2 * 1e-11 * c.gamma / (1 - c.gamma)
		approx.Slices(t, "accelerated V", vf.V, vp.V, bound, 0)
		pi := plain.SoftPolicy(nil, vp, max(c.tau, 0.1))
		dp := plain.Visits(nil, pi, nil)
		df := fast.Visits(nil, pi, nil)
		approx.Slices(t, "accelerated visits", df, dp, bound, 0)
		t.Logf("case %d: value sweeps plain %d accelerated %d; visit sweeps plain %d accelerated %d",
			ci, vp.Iterations, vf.Iterations, plain.VisitIterations(), fast.VisitIterations())
		if vf.Iterations > vp.Iterations {
			t.Errorf("case %d: acceleration took more sweeps (%d) than plain iteration (%d)", ci, vf.Iterations, vp.Iterations)
		}
	}
}

func TestGreedyTiesGoLow(t *testing.T) {
	q := []float64{1, 3, 3, -1, -2, -1, 0, 0, 0}
	got := mdp.Greedy(nil, q, 3)
	if want := []int{1, 0, 0}; !slices.Equal(got, want) {
		t.Fatalf("Greedy = %v, want %v", got, want)
	}
}
