package gridworld

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/ot"
)

// TestExactW2KnownValues checks the LP against hand-computed transports.
func TestExactW2KnownValues(t *testing.T) {
	l := ot.UniformLattice(1, 3) // points 0, 1, 2
	c := l.CostMatrix()
	cases := []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 0, 0}, []float64{0, 0, 1}, 4},
		{[]float64{0.5, 0.5, 0}, []float64{0, 0.5, 0.5}, 1},
		{[]float64{0.2, 0.3, 0.5}, []float64{0.2, 0.3, 0.5}, 0},
	}
	for _, cs := range cases {
		got, err := exactW2(c, cs.a, cs.b)
		if err != nil {
			t.Fatal(err)
		}
		approx.Equal(t, "W2²", got, cs.want, 1e-9, 0)
	}
	// The exact barycenter of two Diracs at 0 and 2 with equal weights is the Dirac at 1.
	bar, err := ot.ExactBarycenter(c, 3, [][]float64{{1, 0, 0}, {0, 0, 1}}, []float64{0.5, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "barycenter", bar, []float64{0, 1, 0}, 1e-9, 0)
}

// TestTheorem1OnRandomInstances checks every step of Theorem 1's proof and
// the bounds T1–T3 with the exact (LP) fixed-support barycenter, on random
// lattices, features, true rewards and client errors.
func TestTheorem1OnRandomInstances(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lattices := []ot.Lattice{
		ot.UniformLattice(1, 3, 2),
		{Axes: []ot.Axis{ot.UniformAxis(3, 1), ot.CategoricalAxis(2)}},
		ot.UniformLattice(0.5, 7),
	}
	for trial := range 30 {
		l := lattices[trial%len(lattices)]
		n := l.Len()
		cost := l.CostMatrix()
		d := 2
		phi := mat.NewDense(n, d, nil)
		for i := range n {
			for j := range d {
				phi.Set(i, j, rng.NormFloat64())
			}
		}
		thetaStar := []float64{rng.NormFloat64(), rng.NormFloat64()}
		rStar := make([]float64, n)
		for x := range n {
			rStar[x] = phi.At(x, 0)*thetaStar[0] + phi.At(x, 1)*thetaStar[1]
			if trial%2 == 1 { // r* outside the span of Φ
				rStar[x] += 0.3 * rng.NormFloat64()
			}
		}
		K := 2 + rng.IntN(3)
		rs := make([][]float64, K)
		alpha := make([]float64, K)
		for i := range rs {
			scale := rng.Float64()
			rs[i] = make([]float64, n)
			for x := range n {
				rs[i][x] = rStar[x] + scale*rng.NormFloat64()
			}
			alpha[i] = 0.1 + rng.Float64()
		}
		rep, ps, pStar, err := newReport(l, phi, rs, rStar, alpha)
		if err != nil {
			t.Fatal(err)
		}
		// Step 1: T_σ is 2/Z_min-Lipschitz in ℓ1.
		// Step 2: W2² ≤ (D²/2)‖μ − ν‖₁.
		sumW := 0.0
		for i, p := range ps {
			l1 := floats.Distance(p, pStar, 1)
			if l1 > 2/rep.ZMin*rep.Eps[i]*(1+1e-12) {
				t.Fatalf("trial %d client %d: ‖p_i − p*‖₁ = %g > 2ε_i/Z_min = %g", trial, i, l1, 2/rep.ZMin*rep.Eps[i])
			}
			w2, err := exactW2(cost, p, pStar)
			if err != nil {
				t.Fatal(err)
			}
			if w2 > rep.D*rep.D/2*l1*(1+1e-9)+1e-12 {
				t.Fatalf("trial %d: W2² = %g > D²/2·‖·‖₁ = %g", trial, w2, rep.D*rep.D/2*l1)
			}
			sumW += rep.Alpha[i] * w2
		}
		bar, err := ot.ExactBarycenter(cost, n, ps, rep.Alpha)
		if err != nil {
			t.Fatal(err)
		}
		approx.Equal(t, "barycenter mass", floats.Sum(bar), 1, 1e-9, 0)
		// Step 3: barycenter contraction.
		w2bar, err := exactW2(cost, bar, pStar)
		if err != nil {
			t.Fatal(err)
		}
		if w2bar > 4*sumW*(1+1e-9)+1e-12 {
			t.Fatalf("trial %d: W2²(p̄,p*) = %g > 4Σα W2²(p_i,p*) = %g", trial, w2bar, 4*sumW)
		}
		if err := rep.theorem1(phi, cost, bar, pStar, rStar); err != nil {
			t.Fatal(err)
		}
		for name, q := range map[string]Inequality{"T1": *rep.T1, "T2": rep.T2, "T3": rep.T3} {
			if !q.Holds || !(q.LHS >= 0) {
				t.Fatalf("trial %d: %s fails: LHS %g, RHS %g", trial, name, q.LHS, q.RHS)
			}
		}
	}
}

// TestTheorem2OnRandomMDPs checks 0 ≤ J(π_r; r) − J(π_s; r) ≤ 2/(1−γ)‖r−s‖∞
// on random dense MDPs and reward pairs.
func TestTheorem2OnRandomMDPs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		S, A := 2+rng.IntN(6), 2+rng.IntN(3)
		b := mdp.NewBuilder(S, A)
		b.Gamma = []float64{0.5, 0.9, 0.95}[trial%3]
		for s := range S {
			for a := range A {
				w := make([]float64, S)
				for s2 := range w {
					w[s2] = rng.ExpFloat64()
				}
				floats.Scale(1/floats.Sum(w), w)
				for s2, p := range w {
					b.AddTransition(s, a, s2, p)
				}
			}
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		r := make([]float64, S*A)
		s := make([]float64, S*A)
		for k := range r {
			r[k] = rng.NormFloat64()
			s[k] = r[k] + rng.Float64()*rng.NormFloat64()
		}
		gap, err := ReturnGap(m, r, s)
		if err != nil {
			t.Fatal(err)
		}
		bound := 2 / (1 - m.Gamma) * floats.Distance(r, s, math.Inf(1))
		if gap < -1e-8 || gap > bound*(1+1e-9) {
			t.Fatalf("trial %d: gap %g outside [0, %g]", trial, gap, bound)
		}
	}
}

// TestBoundsOnGridWorld runs the study's bounds on a 5×5 instance and checks
// that every inequality it reports holds.
func TestBoundsOnGridWorld(t *testing.T) {
	c := QuickConfig()
	st, err := c.buildSetup(EnvConfig{GridSize: 5, NumberOfClients: 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	thetas := [][]float64{{-0.05, 0.02}, {-0.01, -0.004}, {-0.3, 0.1}}
	deployed, err := fusion.Mean(thetas, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mdps []*mdp.MDP
	var phis []*mat.Dense
	for _, e := range st.clients {
		mdps, phis = append(mdps, e.MDP), append(phis, e.Phi)
	}
	rep, err := Bounds(st.probe, thetas, nil, c.Expert.TrueReward, c.fusionOptions(ot.IBP), deployed, mdps, phis)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.T2.Holds || !rep.T3.Holds {
		t.Fatalf("T2 %+v or T3 %+v fails", rep.T2, rep.T3)
	}
	for i, q := range rep.Perf {
		if !q.Holds || q.LHS < -1e-8 {
			t.Fatalf("Theorem 2 fails on client %d: %+v", i, q)
		}
	}
}

// TestW2UpperBound: the Sinkhorn-based bound is never below the exact W2 and
// close to it on small lattices.
func TestW2UpperBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	l := ot.Lattice{Axes: []ot.Axis{ot.UniformAxis(3, 1), ot.UniformAxis(3, 1), ot.CategoricalAxis(2)}}
	for range 5 {
		a, b := make([]float64, l.Len()), make([]float64, l.Len())
		for i := range a {
			a[i], b[i] = rng.Float64(), rng.Float64()
		}
		floats.Scale(1/floats.Sum(a), a)
		floats.Scale(1/floats.Sum(b), b)
		w2sq, err := exactW2(l.CostMatrix(), a, b)
		if err != nil {
			t.Fatal(err)
		}
		up, err := W2UpperBound(l, a, b)
		if err != nil {
			t.Fatal(err)
		}
		exact := math.Sqrt(w2sq)
		if up < exact-1e-9 || up > exact+0.01 {
			t.Fatalf("upper bound %g vs exact W2 %g", up, exact)
		}
	}
}

// exactW2 is ot.ExactCost for two measures on one support.
func exactW2(cost, a, b []float64) (float64, error) {
	c, _, err := ot.ExactCost(cost, len(a), len(b), a, b)
	return c, err
}
