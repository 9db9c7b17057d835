package irl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// randomFeatures returns an (S*A)×d matrix with entries uniform in [0,1).
func randomFeatures(seed uint64, n, d int) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 5))
	data := make([]float64, n*d)
	for i := range data {
		data[i] = rng.Float64()
	}
	return mat.NewDense(n, d, data)
}

// expertDemos samples n episodes (capped at maxSteps) from the soft-optimal policy of theta at temperature tau.
func expertDemos(m *mdp.MDP, phi *mat.Dense, theta []float64, tau float64, n, maxSteps int, seed uint64) ([]Trajectory, *mdp.Policy) {
	ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13})
	defer ws.Close()
	r := features.Reward(make([]float64, m.NumPairs()), phi, theta)
	pi := ws.SoftPolicy(nil, ws.SoftValueIteration(nil, r, tau), tau)
	rng := rand.New(rand.NewPCG(seed, 9))
	demos := make([]Trajectory, 0, n)
	for len(demos) < n {
		s, a := m.Rollout(rng, pi, maxSteps)
		if len(a) > 0 {
			demos = append(demos, Trajectory{States: s, Actions: a})
		}
	}
	return demos, pi
}

func TestGradientFiniteDifferences(t *testing.T) {
	cases := []struct {
		name           string
		S, A, k, nTerm int
		gamma          float64
		horizon        int
		tau, l2, h     float64
		initFromMDP    bool
	}{
		{"tau 1", 6, 3, 3, 0, 0.9, 0, 1, 0, 1e-5, false},
		{"tau 0.1 terminal l2", 7, 3, 2, 1, 0.9, 0, 0.1, 0.3, 1e-5, false},
		{"tau 0.3 finite horizon", 6, 2, 3, 1, 0.95, 7, 0.3, 0.1, 1e-5, false},
		{"tau 1 init from mdp", 5, 4, 2, 1, 0.8, 0, 1, 0.05, 1e-5, true},
		{"tau 1e-3 paper", 6, 3, 3, 1, 0.9, 0, 1e-3, 0.1, 1e-7, false},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mdptest.RandomMDP(uint64(100+ci), c.S, c.A, c.k, c.nTerm, c.gamma, c.horizon)
			d := 4
			phi := randomFeatures(uint64(100+ci), m.NumPairs(), d)
			rng := rand.New(rand.NewPCG(uint64(ci), 0))
			theta := make([]float64, d)
			for j := range theta {
				theta[j] = rng.NormFloat64()
			}
			demos, _ := expertDemos(m, phi, theta, 1, 20, 15, uint64(ci))
			o, err := NewObjective(m, phi, demos, Config{Temperature: c.tau, L2: c.l2, InitFromMDP: c.initFromMDP,
				Solver: mdp.Options{Tol: 1e-14, MaxIter: 20000}})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			// Evaluate at a different θ than the one that generated the data.
			for j := range theta {
				theta[j] = 0.5 * rng.NormFloat64()
			}
			grad := make([]float64, d)
			o.Eval(grad, theta)
			fd := make([]float64, d)
			tmp := make([]float64, d)
			for j := range theta {
				tp := append([]float64(nil), theta...)
				tp[j] += c.h
				fp, _ := o.Eval(tmp, tp)
				tp[j] -= 2 * c.h
				fm, _ := o.Eval(tmp, tp)
				fd[j] = (fp - fm) / (2 * c.h)
			}
			scale := floats.Norm(grad, math.Inf(1))
			t.Logf("max |analytic − finite difference| / ‖∇‖∞ = %.2g", approx.MaxAbsDiff(grad, fd)/scale)
			for j := range grad {
				if math.Abs(grad[j]-fd[j]) > 1e-6*scale {
					t.Fatalf("grad[%d] = %.12g, finite difference %.12g (|diff| %.3g > 1e-6 * %.3g)", j, grad[j], fd[j], math.Abs(grad[j]-fd[j]), scale)
				}
			}
		})
	}
}

// TestRecovery learns θ from expert demonstrations and checks feature matching and return.
func TestRecovery(t *testing.T) {
	cases := []struct {
		name    string
		S, A, k int
		nTerm   int
		gamma   float64
		horizon int
		n       int
		opt     string
		lr      float64
	}{
		{"finite horizon adam", 20, 3, 3, 0, 0.95, 25, 400, OptimizerAdam, 0.05},
		// Episodes that end in terminal states have heavy-tailed returns: with
		// 400 episodes the demonstrations' own sampling error (1.8–3.2%) exceeds
		// the 1% criterion, so this case samples 25,600 (SE ≈ 0.2–0.4%).
		{"terminal gd", 15, 4, 3, 4, 0.9, 0, 25600, OptimizerGD, 0.2},
	}
	for ci, c := range cases {
		for seed := uint64(0); seed < 3; seed++ {
			recoveryCase(t, fmt.Sprintf("%s/seed=%d", c.name, seed), 200+10*seed+uint64(ci), c.S, c.A, c.k, c.nTerm, c.gamma, c.horizon, c.n, c.opt, c.lr)
		}
	}
}

// recoveryCase samples an expert for a random θ* on a random MDP made from
// seed, learns θ̂ and checks feature matching and the return under θ*.
func recoveryCase(t *testing.T, name string, seed uint64, S, A, k, nTerm int, gamma float64, horizon, n int, opt string, lr float64) {
	t.Run(name, func(t *testing.T) {
		{
			m := mdptest.RandomMDP(seed, S, A, k, nTerm, gamma, horizon)
			d := 5
			phi := randomFeatures(seed, m.NumPairs(), d)
			rng := rand.New(rand.NewPCG(seed, 0))
			thetaStar := make([]float64, d)
			for j := range thetaStar {
				thetaStar[j] = 2 * rng.NormFloat64()
			}
			const tau = 1
			demos, expertPi := expertDemos(m, phi, thetaStar, tau, n, 200, seed)
			steps := 0
			for _, tr := range demos {
				steps += len(tr.Actions)
			}
			if steps < 2000 {
				t.Fatalf("only %d demonstration steps", steps)
			}
			res, err := MaxEnt(context.Background(), m, phi, demos, Config{Temperature: tau, LearningRate: lr,
				Optimizer: opt, MaxIter: 5000, GradTol: 1e-6})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Converged {
				t.Fatalf("not converged after %d iterations, grad norm %g", res.Iterations, res.GradNorm[len(res.GradNorm)-1])
			}
			if len(res.LogLik) != res.Iterations+1 || len(res.GradNorm) != res.Iterations+1 {
				t.Fatalf("curve lengths %d/%d for %d iterations", len(res.LogLik), len(res.GradNorm), res.Iterations)
			}
			// Feature expectations of the learned policy reproduce the demonstrations'.
			scale := floats.Norm(res.EmpiricalFeatures, math.Inf(1))
			approx.Slices(t, "μ_π(θ̂) vs μ_D", res.ExpectedFeatures, res.EmpiricalFeatures, 0, 1e-3)
			if diff := approx.MaxAbsDiff(res.ExpectedFeatures, res.EmpiricalFeatures); diff > 1e-3*scale {
				t.Fatalf("feature mismatch %g", diff)
			}
			// Return under θ* of the learned soft policy vs the expert's.
			ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-12})
			defer ws.Close()
			rStar := features.Reward(make([]float64, m.NumPairs()), phi, thetaStar)
			rHat := features.Reward(make([]float64, m.NumPairs()), phi, res.Theta)
			learnedPi := ws.SoftPolicy(nil, ws.SoftValueIteration(nil, rHat, tau), tau)
			jExpert := ws.Return(expertPi, rStar)
			jLearned := ws.Return(learnedPi, rStar)
			// Standard error of the demonstrations' mean discounted return under θ*.
			var sum, sum2 float64
			for _, tr := range demos {
				g, disc := 0.0, 1.0
				for t, a := range tr.Actions {
					g += disc * rStar[tr.States[t]*m.NumActions+a]
					disc *= m.Gamma
				}
				sum, sum2 = sum+g, sum2+g*g
			}
			nd := float64(len(demos))
			se := math.Sqrt((sum2/nd - (sum/nd)*(sum/nd)) / nd)
			t.Logf("%d steps in %d episodes, %d iterations, θ* %.3f θ̂ %.3f, return expert %.5f learned %.5f (gap %.2f%%, sampling SE %.2f%%)",
				steps, len(demos), res.Iterations, thetaStar, res.Theta, jExpert, jLearned, 100*(jLearned-jExpert)/jExpert, 100*se/math.Abs(jExpert))
			approx.Equal(t, "return of learned policy under θ*", jLearned, jExpert, 0, 0.01)
		}
	})
}

// TestPaperSettingsAscend runs the appendix settings (τ=1e-3, η=5e-3, L2) and checks the objective improves.
func TestPaperSettingsAscend(t *testing.T) {
	m := mdptest.RandomMDP(300, 30, 4, 3, 1, 0.95, 0)
	phi := randomFeatures(300, m.NumPairs(), 6)
	thetaStar := []float64{1, -1, 0.5, 0, 2, -0.5}
	demos, _ := expertDemos(m, phi, thetaStar, 1e-3, 50, 100, 3)
	res, err := MaxEnt(context.Background(), m, phi, demos, Config{L2: 0.01, MaxIter: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 50 {
		t.Fatalf("iterations = %d, want the full budget 50", res.Iterations)
	}
	if first, last := res.Objective[0], res.Objective[50]; !(last > first) {
		t.Fatalf("objective went from %g to %g", first, last)
	}
}

func TestWarmStartContinues(t *testing.T) {
	m := mdptest.RandomMDP(301, 12, 3, 2, 0, 0.9, 0)
	phi := randomFeatures(301, m.NumPairs(), 3)
	demos, _ := expertDemos(m, phi, []float64{1, -2, 0.5}, 1, 30, 40, 4)
	cfg := Config{Temperature: 1, LearningRate: 0.05, GradTol: -1, MaxIter: 20}
	full, err := MaxEnt(context.Background(), m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxIter = 12
	a, _ := MaxEnt(context.Background(), m, phi, demos, cfg)
	cfg.MaxIter, cfg.Theta0 = 8, a.Theta
	b, _ := MaxEnt(context.Background(), m, phi, demos, cfg)
	approx.Slices(t, "θ after 12+8 vs 20 steps", b.Theta, full.Theta, 1e-9, 1e-9)
	approx.Slices(t, "log-likelihood curve", b.LogLik, full.LogLik[12:], 1e-9, 1e-9)
}

func TestMaxEntCancel(t *testing.T) {
	m := mdptest.RandomMDP(302, 8, 2, 2, 0, 0.9, 0)
	phi := randomFeatures(302, m.NumPairs(), 2)
	demos, _ := expertDemos(m, phi, []float64{1, -1}, 1, 5, 20, 5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := MaxEnt(ctx, m, phi, demos, Config{MaxIter: 10, GradTol: -1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if len(res.Theta) != 2 || res.Iterations != 0 {
		t.Fatalf("partial result θ=%v iterations %d", res.Theta, res.Iterations)
	}
}

func TestConfigErrors(t *testing.T) {
	m := mdptest.RandomMDP(303, 4, 2, 2, 0, 0.9, 0)
	phi := randomFeatures(303, m.NumPairs(), 2)
	demos := []Trajectory{{States: []int{0, 1}, Actions: []int{1}}}
	cases := []struct {
		name string
		cfg  Config
		phi  *mat.Dense
	}{
		{"negative lr", Config{LearningRate: -1}, phi},
		{"negative tau", Config{Temperature: -1}, phi},
		{"bad optimizer", Config{Optimizer: "sgd"}, phi},
		{"theta0 length", Config{Theta0: []float64{1}}, phi},
		{"feature rows", Config{}, mat.NewDense(3, 2, nil)},
	}
	for _, c := range cases {
		if _, err := MaxEnt(context.Background(), m, c.phi, demos, c.cfg); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestEmpiricalFeaturesGiven: Config.EmpiricalFeatures replaces μ_D: set
// to the demonstrations' own feature sums it changes nothing, bit for bit;
// set to other values the gradient at θ moves by exactly their difference
// (∇ = μ_D − μ_π − λθ), with and without the absorbing state; a wrong
// length or a non-finite entry is refused.
func TestEmpiricalFeaturesGiven(t *testing.T) {
	m := mdptest.RandomMDP(41, 7, 3, 3, 1, 0.9, 0)
	const d = 4
	phi := randomFeatures(41, m.NumPairs(), d)
	demos, _ := expertDemos(m, phi, []float64{1, -0.5, 0.3, 0.2}, 1, 15, 12, 3)
	theta := []float64{0.2, -0.1, 0.4, 0.05}
	for _, absorbing := range []bool{false, true} {
		cfg := Config{Temperature: 1, L2: 0.1, Absorbing: absorbing, Solver: mdp.Options{Tol: 1e-13, MaxIter: 20000}}
		grad := func(c Config) []float64 {
			o, err := NewObjective(m, phi, demos, c)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			g := make([]float64, o.Dim())
			o.Eval(g, append(slices.Clone(theta), make([]float64, o.Dim()-d)...))
			return g
		}
		g0 := grad(cfg)
		own, err := EmpiricalFeatureExpectations(nil, m, phi, demos)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.EmpiricalFeatures = own
		if g := grad(c); !slices.Equal(g, g0) {
			t.Fatalf("absorbing %v: μ_D given as the demonstrations' own sums moved the gradient: %v, want %v", absorbing, g, g0)
		}
		shift := []float64{0.5, -1, 0, 2}
		c.EmpiricalFeatures = slices.Clone(own)
		floats.Add(c.EmpiricalFeatures, shift)
		g := grad(c)
		for j := range g {
			want := g0[j]
			if j < d {
				want += shift[j]
			}
			if math.Abs(g[j]-want) > 1e-12 {
				t.Fatalf("absorbing %v: ∇[%d] = %v with μ_D shifted by %v, want %v", absorbing, j, g[j], shift, want)
			}
		}
		for _, bad := range [][]float64{{1, 2, 3}, {1, 2, math.NaN(), 4}} {
			c.EmpiricalFeatures = bad
			if _, err := NewObjective(m, phi, demos, c); err == nil {
				t.Fatalf("absorbing %v: μ_D %v accepted", absorbing, bad)
			}
		}
	}
}
