package gridworld

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/ot"
)

// Inequality is one bound: the left-hand side achieved and the right-hand side.
type Inequality struct {
	LHS   float64 `json:"lhs"`
	RHS   float64 `json:"rhs"`
	Holds bool    `json:"holds"`
}

func ineq(lhs, rhs float64) Inequality {
	return Inequality{LHS: lhs, RHS: rhs, Holds: lhs <= rhs*(1+1e-9)+1e-12}
}

// BoundsReport evaluates Theorem 1 (eqs. T1–T3) and Theorem 2 on one fusion.
// All reward vectors live on the probe lattice X (n points), ε_i is measured
// against the true reward r* = Φθ*, and the shift σ makes every r̂_i + σ and
// r* + σ positive (fusion.AutoSigma over all of them).
type BoundsReport struct {
	N        int       `json:"n"`
	D        float64   `json:"diameter"`
	Delta    float64   `json:"min_spacing"`
	KappaPhi float64   `json:"kappa_phi"`
	Sigma    float64   `json:"sigma"`
	ZStar    float64   `json:"z_star"`
	ZMin     float64   `json:"z_min"`
	Alpha    []float64 `json:"alpha"`
	// Eps holds ε_i = ‖r̂_i − r*‖₁.
	Eps []float64 `json:"eps"`
	// WeightedEps is Σ α_i ε_i.
	WeightedEps float64 `json:"weighted_eps"`
	// T1 is W2(p̄, p*) ≤ 2D/√Zmin (Σα_iε_i)^½. Its LHS is exact (linear
	// programming) when n ≤ ExactLimit (T1Exact); otherwise it is the upper
	// bound √⟨P,C⟩ + D·(‖Pᵀ1 − p*‖₁/2)^½ from a log-domain Sinkhorn plan P at
	// ε = 0.1 squared spacings (so "holds" is then a sufficient check).
	T1      *Inequality `json:"t1,omitempty"`
	T1Exact bool        `json:"t1_exact"`
	// T2 is ‖r̄_{Z(r*)} − r*‖₂ ≤ 2√2 D Z(r*)/(δ√Zmin) (Σα_iε_i)^½.
	T2 Inequality `json:"t2"`
	// T3 is ‖θ̂ − θ*‖₂ ≤ κ_Φ · RHS(T2).
	T3 Inequality `json:"t3"`
	// Perf[i] is Theorem 2 on client i: J_i(π_r*; r*) − J_i(π_s; r*) ≤
	// 2/(1−γ)‖r* − s‖∞ for the deployed fused reward s = Φ_iθ̂ (the
	// barycentric θ with the fusion's own Z) on the client's own features.
	Perf []Inequality `json:"perf"`
	// PerfExplicit is the right-hand side of eq. (perf-explicit).
	PerfExplicit float64 `json:"perf_explicit_rhs"`
}

// ExactLimit is the largest lattice for which Bounds solves the exact W2 LP.
const ExactLimit = 64

// KappaPhi returns 1/σ_min(Φ).
func KappaPhi(phi *mat.Dense) (float64, error) {
	var svd mat.SVD
	if !svd.Factorize(phi, mat.SVDNone) {
		return 0, errors.New("SVD of Φ failed")
	}
	v := svd.Values(nil)
	sm := v[len(v)-1]
	if sm <= 0 {
		return math.Inf(1), nil
	}
	return 1 / sm, nil
}

// Bounds evaluates the theorems for clients' θ_i on probe p with true θ*.
// opt configures the barycenter (its Sigma and Z are replaced by the
// theorem's); deployed is the fused θ actually used by the clients (for
// Theorem 2); clientMDPs and clientPhis (optional, same length as thetas)
// enable Theorem 2.
func Bounds(p fusion.Probe, thetas [][]float64, alpha []float64, thetaStar []float64, opt fusion.Options,
	deployed []float64, clientMDPs []*mdp.MDP, clientPhis []*mat.Dense) (*BoundsReport, error) {
	return bounds(p, thetas, alpha, thetaStar, opt, deployed, clientMDPs, clientPhis, math.MaxInt)
}

// bounds is Bounds computing T1's Sinkhorn upper bound only when n ≤ w2Limit.
func bounds(p fusion.Probe, thetas [][]float64, alpha []float64, thetaStar []float64, opt fusion.Options,
	deployed []float64, clientMDPs []*mdp.MDP, clientPhis []*mat.Dense, w2Limit int) (*BoundsReport, error) {
	rStar := features.Reward(nil, p.Phi, thetaStar)
	rs := make([][]float64, len(thetas))
	for i, th := range thetas {
		rs[i] = features.Reward(nil, p.Phi, th)
	}
	rep, _, pStar, err := newReport(p.Lattice, p.Phi, rs, rStar, alpha)
	if err != nil {
		return nil, err
	}
	alpha = rep.Alpha
	zStar := rep.ZStar
	n := rep.N
	o := opt
	o.Sigma, o.Z = rep.Sigma, zStar
	res, err := fusion.Barycentric(p.Phi, p.Lattice, thetas, alpha, o)
	if err != nil {
		return nil, err
	}
	var cost []float64
	if n <= ExactLimit {
		cost = p.Lattice.CostMatrix()
	}
	if err := rep.theorem1(p.Phi, cost, res.Barycenter, pStar, rStar); err != nil {
		return nil, err
	}
	if cost == nil && n <= w2Limit {
		up, err := W2UpperBound(p.Lattice, res.Barycenter, pStar)
		if err != nil {
			return nil, err
		}
		t1 := ineq(up, rep.T1RHS())
		rep.T1 = &t1
	}
	rhs2 := rep.T2.RHS
	if clientMDPs != nil {
		gamma := clientMDPs[0].Gamma
		rep.PerfExplicit = 2 / (1 - gamma) * rhs2
		for i, m := range clientMDPs {
			r := features.Reward(nil, clientPhis[i], thetaStar)
			s := features.Reward(nil, clientPhis[i], deployed)
			gap, err := ReturnGap(m, r, s)
			if err != nil {
				return nil, err
			}
			rep.Perf = append(rep.Perf, ineq(gap, 2/(1-gamma)*floats.Distance(r, s, math.Inf(1))))
		}
	}
	return rep, nil
}

// newReport computes the instance constants of Theorem 1 for client rewards
// rs and true reward rStar on lattice l with features phi: D, δ, κ_Φ, σ,
// Z(r*), Z_min, α, ε_i, and returns the normalized p_i and p*.
func newReport(l ot.Lattice, phi *mat.Dense, rs [][]float64, rStar, alpha []float64) (*BoundsReport, [][]float64, []float64, error) {
	K := len(rs)
	alpha, err := fusion.Weights(alpha, K)
	if err != nil {
		return nil, nil, nil, err
	}
	rep := &BoundsReport{N: len(rStar), D: l.Diameter(), Delta: math.Sqrt(l.CostUnit()), Alpha: alpha}
	if rep.KappaPhi, err = KappaPhi(phi); err != nil {
		return nil, nil, nil, err
	}
	rep.Sigma = fusion.AutoSigma(append(append([][]float64(nil), rs...), rStar)...)
	pStar, zStar, err := fusion.ShiftNormalize(nil, rStar, rep.Sigma)
	if err != nil {
		return nil, nil, nil, err
	}
	rep.ZStar, rep.ZMin = zStar, zStar
	ps := make([][]float64, K)
	rep.Eps = make([]float64, K)
	for i, r := range rs {
		var z float64
		if ps[i], z, err = fusion.ShiftNormalize(nil, r, rep.Sigma); err != nil {
			return nil, nil, nil, err
		}
		rep.ZMin = math.Min(rep.ZMin, z)
		rep.Eps[i] = floats.Distance(r, rStar, 1)
		rep.WeightedEps += alpha[i] * rep.Eps[i]
	}
	return rep, ps, pStar, nil
}

// theorem1 fills T1 (when cost is non-nil: exact W2 by LP), T2 and T3 for
// the barycenter pbar of the report's clients; rep's D, Delta, KappaPhi,
// Sigma, ZStar, ZMin and WeightedEps must be set.
func (rep *BoundsReport) theorem1(phi *mat.Dense, cost, pbar, pStar, rStar []float64) error {
	root := math.Sqrt(rep.WeightedEps)
	rhs1 := 2 * rep.D / math.Sqrt(rep.ZMin) * root
	rhs2 := 2 * math.Sqrt2 * rep.D * rep.ZStar / (rep.Delta * math.Sqrt(rep.ZMin)) * root
	if cost != nil {
		w2sq, _, err := ot.ExactCost(cost, len(pbar), len(pStar), pbar, pStar)
		if err != nil {
			return err
		}
		t1 := ineq(math.Sqrt(math.Max(0, w2sq)), rhs1)
		rep.T1, rep.T1Exact = &t1, true
	}
	rbar := make([]float64, len(pbar))
	for x, v := range pbar {
		rbar[x] = rep.ZStar*v - rep.Sigma
	}
	thetaHat, err := fusion.BackProject(phi, rbar)
	if err != nil {
		return err
	}
	thetaBest, err := fusion.BackProject(phi, rStar)
	if err != nil {
		return err
	}
	rep.T2 = ineq(floats.Distance(rbar, rStar, 2), rhs2)
	rep.T3 = ineq(floats.Distance(thetaHat, thetaBest, 2), rep.KappaPhi*rhs2)
	return nil
}

// T1RHS returns the right-hand side of eq. (T1), 2D/√Zmin (Σα_iε_i)^½.
func (rep *BoundsReport) T1RHS() float64 {
	return 2 * rep.D / math.Sqrt(rep.ZMin) * math.Sqrt(rep.WeightedEps)
}

// W2UpperBound returns a certified upper bound on W2(a, b) on lattice l from
// a log-domain Sinkhorn plan P at ε = 0.1 squared spacings whose a-marginal
// is exact: W2(a, b) ≤ W2(a, Pᵀ1) + W2(Pᵀ1, b) ≤ √⟨P, C⟩ + D·√(‖Pᵀ1 − b‖₁/2).
func W2UpperBound(l ot.Lattice, a, b []float64) (float64, error) {
	k, err := ot.NewLatticeKernel(l, 0.1*l.CostUnit())
	if err != nil {
		return 0, err
	}
	res, err := ot.Sinkhorn(k, a, b, ot.SinkhornOptions{Log: true, MaxIter: 5000, Tol: 1e-10})
	if err != nil {
		return 0, fmt.Errorf("W2 upper bound: %w", err)
	}
	return math.Sqrt(math.Max(0, res.Cost)) + l.Diameter()*math.Sqrt(res.MarginalError/2), nil
}

// ReturnGap returns J(π_r; r) − J(π_s; r) on m, where π_x is the greedy
// optimal policy for reward x (value iteration) and J(π; r) = ⟨d^π, r⟩ is
// the discounted return from m.Init.
func ReturnGap(m *mdp.MDP, r, s []float64) (float64, error) {
	ws := mdp.NewWorkspace(m, mdp.Options{Workers: 1, Tol: 1e-12})
	defer ws.Close()
	greedy := func(plan []float64) *mdp.Policy {
		return mdp.DeterministicPolicy(m, mdp.Greedy(nil, ws.ValueIteration(nil, plan).Q, m.NumActions))
	}
	return ws.Return(greedy(r), r) - ws.Return(greedy(s), r), nil
}

// StudyW2Limit is the largest probe lattice on which the study (not the
// bounds command) computes T1's Sinkhorn upper bound; larger probes
// (n = 400, 1600) would add 1–7 CPU seconds per run.
const StudyW2Limit = 100

// cellBounds evaluates the bounds on a Table-1 cell with its fusion settings.
func (c Config) cellBounds(f *Fit, st *setup, w2Limit int) (*BoundsReport, error) {
	method, err := c.barycenterMethod()
	if err != nil {
		return nil, err
	}
	opt := c.fusionOptions(method)
	opt.Sigma, opt.Z = 0, 0
	mdps := make([]*mdp.MDP, len(st.clients))
	phis := make([]*mat.Dense, len(st.clients))
	for i, e := range st.clients {
		mdps[i], phis[i] = e.MDP, e.Phi
	}
	// The ε_i of the theorems are the errors of the rewards the server
	// fused: with privacy, the clipped and noised θ̃_i.
	thetas := f.Local
	if f.Sent != nil {
		thetas = f.Sent
	}
	return bounds(st.probe, thetas, st.weights, c.Expert.TrueReward, opt, f.Fused[fusion.MethodBarycenter], mdps, phis, w2Limit)
}
