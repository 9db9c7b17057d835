package irl

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/fedirl/fedirl/pkg/jointopt"
)

// Personalize returns the personalized fit θ^p = argmax L(θ) − (μ/2)‖θ − center‖²
// of one client's objective around a fused θ̄ (Ditto's objective): μ = 0 is
// the client's own MaxEnt optimum, μ → ∞ the fused θ itself. It starts from
// center, where the pull is zero.
func Personalize(ctx context.Context, o *Objective, center []float64, mu float64, cfg jointopt.Config) (*jointopt.State, error) {
	return PersonalizeFrom(ctx, o, center, mu, center, cfg)
}

// PersonalizeFrom is Personalize started from start instead of the center
// (a warm start: the objective is strictly concave for μ > 0 or λ > 0, so
// the optimum is the same).
func PersonalizeFrom(ctx context.Context, o *Objective, center []float64, mu float64, start []float64, cfg jointopt.Config) (*jointopt.State, error) {
	if len(center) != o.d || len(start) != o.d {
		return nil, fmt.Errorf("irl: personalization center has %d entries, the objective %d", len(center), o.d)
	}
	if !(mu >= 0) || math.IsInf(mu, 0) {
		return nil, fmt.Errorf("irl: personalization weight μ = %v, want finite and ≥ 0", mu)
	}
	terms := []jointopt.Objective{o.Term(ctx)}
	w := []float64{1}
	if mu > 0 {
		terms, w = append(terms, jointopt.Prox(center, mu)), append(w, 1)
	}
	return jointopt.Maximize(terms, w, start, cfg)
}

// ProxChoice is the outcome of choosing a personalization weight on a
// client's held-out demonstrations.
type ProxChoice struct {
	// Scale is s = tr(−∇²L_fit(center))/d, the unit of the candidate
	// weights μ = c·s (so the candidates mean the same whatever the
	// temperature and the features' scale).
	Scale float64 `json:"scale"`
	// Candidates are the declared c, finite and ≥ 0; with WithCenter the
	// fused θ itself (μ = ∞) is the last candidate.
	Candidates []float64 `json:"candidates"`
	WithCenter bool      `json:"with_center"`
	// ValLogLik is the held-out demonstrations' mean log-likelihood at each
	// candidate's fit to the other demonstrations (the center's last).
	ValLogLik []float64 `json:"val_loglik"`
	// Chosen indexes the best candidate (the first of equals;
	// len(Candidates) for the center).
	Chosen int `json:"chosen"`
	// Fit is the chosen candidate's θ on the fitted demonstrations (a
	// warm start for a refit on all of them).
	Fit []float64 `json:"-"`
	// Mu is the chosen weight c·s; Center reports that the fused θ itself
	// was chosen (Mu is then 0 and means ∞).
	Mu     float64 `json:"mu"`
	Center bool    `json:"center"`
}

// ChooseProx fits the personalized θ on fit (a client's objective on part
// of its demonstrations) for each candidate weight c·s, scores each on val
// (the same client's objective on the held-out rest) by its log-likelihood,
// and returns the choice; withCenter adds center itself as a last candidate.
func ChooseProx(ctx context.Context, fit, val *Objective, center []float64, candidates []float64, withCenter bool, cfg jointopt.Config) (ProxChoice, error) {
	if len(candidates) == 0 && !withCenter {
		return ProxChoice{}, fmt.Errorf("irl: no personalization candidates")
	}
	d := fit.d
	e := fit.Evaluate(center, fit.jointRtol)
	tr := 0.0
	for j := range d {
		tr -= e.Hess[j*d+j]
	}
	ch := ProxChoice{Scale: tr / float64(d), Candidates: append([]float64(nil), candidates...), WithCenter: withCenter, Chosen: -1}
	grad := make([]float64, d)
	score := func(k int, theta []float64) {
		_, ll := val.Eval(grad, theta)
		ch.ValLogLik = append(ch.ValLogLik, ll)
		if ch.Chosen < 0 || ll > ch.ValLogLik[ch.Chosen] {
			ch.Chosen = k
		}
	}
	// Fitted from the largest weight down, each from the previous fit (a
	// continuation from the center toward the client's own optimum), and
	// scored in the declared order.
	order := make([]int, len(candidates))
	for k, c := range candidates {
		if !(c >= 0) || math.IsInf(c, 0) {
			return ProxChoice{}, fmt.Errorf("irl: personalization candidate %v, want finite and ≥ 0", c)
		}
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(candidates[b], candidates[a]) })
	fits := make([][]float64, len(candidates))
	start := center
	for _, k := range order {
		s, err := PersonalizeFrom(ctx, fit, center, candidates[k]*ch.Scale, start, cfg)
		if err != nil {
			return ProxChoice{}, err
		}
		fits[k], start = s.Theta, s.Theta
	}
	for k := range candidates {
		score(k, fits[k])
	}
	if withCenter {
		score(len(candidates), center)
	}
	if ch.Center = ch.Chosen == len(candidates); !ch.Center {
		ch.Mu = candidates[ch.Chosen] * ch.Scale
		ch.Fit = fits[ch.Chosen]
	}
	return ch, nil
}
