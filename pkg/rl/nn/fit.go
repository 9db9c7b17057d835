package nn

import (
	"fmt"
	"math"
)

// FitConfig configures Fit; every zero value means the default in brackets.
type FitConfig struct {
	// LearningRate is Adam's step size [1e-2].
	LearningRate float64 `json:"learning_rate,omitempty"`
	// MaxSteps caps the full-batch Adam steps [5000].
	MaxSteps int `json:"max_steps,omitempty"`
	// Patience is the number of steps without a new best error after which
	// the learning rate is halved and the fit restarts from the best
	// parameters met [250]; after ten halvings the fit stops.
	Patience int `json:"patience,omitempty"`
	// Tol stops the fit once the root mean squared error is at most Tol
	// times the targets' standard deviation (or Tol itself for constant
	// targets) [1e-3].
	Tol float64 `json:"tol,omitempty"`
}

// FitResult reports how a fit ended.
type FitResult struct {
	// Steps is the number of Adam steps taken.
	Steps int `json:"steps"`
	// RMSE is the root mean squared error at the returned parameters.
	RMSE float64 `json:"rmse"`
	// TargetStd is the targets' (population) standard deviation.
	TargetStd float64 `json:"target_std"`
	// Converged reports whether RMSE reached the tolerance before MaxSteps.
	Converged bool `json:"converged"`
}

// Fit fits m's single output to the targets y at the n input rows X (n ×
// In, row-major) by regression: full-batch Adam (torch's bias correction,
// ε = 1e-8) on the mean squared error (1/n) Σ_i (m(x_i) − y_i)², from m's
// current parameters, which it overwrites with the best ones it met. A
// constant step size leaves Adam circling the minimum at a distance set by
// the step, so after Patience steps without a new best error the step is
// halved and the fit goes on from the best parameters. It stops when
// RMSE ≤ Tol·std(y) (Converged), after MaxSteps steps or after ten halvings. Every
// step is the same sequence of floating-point operations given the inputs,
// so a fit is reproducible. Errors name the bad argument: a network with
// more than one output, X or y of the wrong length, a non-finite input or
// target, an invalid setting.
func Fit(m *MLP, X []float64, n int, y []float64, cfg FitConfig) (FitResult, error) {
	if cfg.LearningRate == 0 {
		cfg.LearningRate = 1e-2
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 5000
	}
	if cfg.Tol == 0 {
		cfg.Tol = 1e-3
	}
	if cfg.Patience == 0 {
		cfg.Patience = 250
	}
	switch {
	case m.Out() != 1:
		return FitResult{}, fmt.Errorf("nn: Fit: the network has %d outputs, want 1", m.Out())
	case n < 1 || len(X) != n*m.In():
		return FitResult{}, fmt.Errorf("nn: Fit: %d input values for %d rows of %d", len(X), n, m.In())
	case len(y) != n:
		return FitResult{}, fmt.Errorf("nn: Fit: %d targets for %d rows", len(y), n)
	case !(cfg.LearningRate > 0) || math.IsInf(cfg.LearningRate, 0):
		return FitResult{}, fmt.Errorf("nn: Fit: learning_rate = %v, want > 0", cfg.LearningRate)
	case cfg.MaxSteps < 0:
		return FitResult{}, fmt.Errorf("nn: Fit: max_steps = %d, want ≥ 0", cfg.MaxSteps)
	case cfg.Patience < 1:
		return FitResult{}, fmt.Errorf("nn: Fit: patience = %d, want ≥ 1", cfg.Patience)
	case !(cfg.Tol > 0) || math.IsInf(cfg.Tol, 0):
		return FitResult{}, fmt.Errorf("nn: Fit: tol = %v, want > 0", cfg.Tol)
	}
	for i, v := range X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return FitResult{}, fmt.Errorf("nn: Fit: input row %d column %d = %v", i/m.In(), i%m.In(), v)
		}
	}
	mean := 0.0
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return FitResult{}, fmt.Errorf("nn: Fit: target %d = %v", i, v)
		}
		mean += v
	}
	mean /= float64(n)
	ss := 0.0
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	std := math.Sqrt(ss / float64(n))
	goal := cfg.Tol * std
	if std == 0 {
		goal = cfg.Tol
	}
	ws := m.NewWorkspace(n)
	grad := make([]float64, len(m.Params))
	dOut := make([]float64, n)
	best := append([]float64(nil), m.Params...)
	res := FitResult{TargetStd: std, RMSE: math.Inf(1)}
	opt := NewAdam(len(m.Params), cfg.LearningRate, 1e-8)
	since, halvings := 0, 0 // the step of the last new best (or halving), and the halvings so far
	for step := 0; ; step++ {
		out := m.Forward(ws, X, n)
		mse := 0.0
		for i, v := range out {
			e := v - y[i]
			mse += e * e
			dOut[i] = 2 * e / float64(n)
		}
		rmse := math.Sqrt(mse / float64(n))
		if math.IsNaN(rmse) || math.IsInf(rmse, 0) {
			return FitResult{}, fmt.Errorf("nn: Fit: the error became %v at step %d (learning rate %v too large?)", rmse, step, cfg.LearningRate)
		}
		if rmse < res.RMSE {
			res.RMSE, res.Steps = rmse, step
			copy(best, m.Params)
			since = step
		}
		if rmse <= goal {
			res.Converged = true
			break
		}
		if step == cfg.MaxSteps {
			break
		}
		if step-since >= cfg.Patience {
			if halvings == 10 {
				break
			}
			halvings++
			opt.LR /= 2
			since = step
			copy(m.Params, best)
			continue
		}
		clear(grad)
		m.Backward(ws, dOut, grad, nil)
		opt.Step(m.Params, grad)
	}
	copy(m.Params, best)
	return res, nil
}
