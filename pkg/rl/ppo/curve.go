package ppo

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// CurveCSVHeader is the header row WriteCurveCSV writes; eval_return is empty where no evaluation ran.
var CurveCSVHeader = []string{"steps", "episodes", "mean_true_return", "mean_learned_return", "eval_return",
	"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "learning_rate", "clip_range"}

// WriteCurveCSV writes the learning curve as CSV with CurveCSVHeader.
func WriteCurveCSV(w io.Writer, curve []CurvePoint) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CurveCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, p := range curve {
		ev := ""
		if p.EvalReturn != nil {
			ev = f(*p.EvalReturn)
		}
		if err := cw.Write([]string{strconv.Itoa(p.Steps), strconv.Itoa(p.Episodes), f(p.MeanTrueReturn), f(p.MeanLearnedReturn), ev,
			f(p.PolicyLoss), f(p.ValueLoss), f(p.Entropy), f(p.ApproxKL), f(p.ClipFraction), f(p.LearningRate), f(p.ClipRange)}); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing curve CSV: %w", err)
	}
	return nil
}
