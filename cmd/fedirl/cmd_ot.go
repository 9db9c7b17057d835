package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/ot"
)

// otDistanceOutput is the JSON written by "fedirl ot distance".
type otDistanceOutput struct {
	Shape       []int   `json:"shape"`
	Eps         float64 `json:"eps"`
	EpsAbsolute float64 `json:"eps_absolute"`
	LogDomain   bool    `json:"log_domain"`
	// Switched says why the log domain was used although --log was not given.
	Switched      string   `json:"switched_to_log,omitempty"`
	EntropicCost  float64  `json:"entropic_cost"`
	Objective     float64  `json:"regularized_objective"`
	Iterations    int      `json:"iterations"`
	MarginalError float64  `json:"marginal_error"`
	Converged     bool     `json:"converged"`
	ExactW2Sq     *float64 `json:"exact_w2_squared,omitempty"`
	Seconds       float64  `json:"seconds"`
}

func newOTCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ot",
		Short: "Optimal-transport utilities on product lattices",
	}
	var (
		lf       otLatticeFlags
		out      string
		eps, tol float64
		absEps   bool
		logDom   bool
		strict   bool
		exact    string
		iters    int
	)
	dist := &cobra.Command{
		Use:   "distance [flags] A B",
		Short: "Entropic transport cost (and, for small lattices, exact W2²) between two measures",
		Long: `distance runs Sinkhorn between two measures on a product lattice with the
separable squared-Euclidean cost and prints JSON with
  entropic_cost          ⟨P, C⟩ of the entropic plan (what POT's sinkhorn2 returns)
  regularized_objective  ⟨P, C⟩ + ε Σ P (log P − 1)
  exact_w2_squared       the unregularized optimum, by linear programming, when
                         n² ≤ 40000 (or --exact=never / --exact=always)
Inputs are .json, .npy or .csv files as for "fedirl barycenter"; both are
normalized to mass 1.

  fedirl ot distance --shape 10,10 --eps 0.5 a.csv b.csv`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := otReadInputs(args)
			if err != nil {
				return err
			}
			if err := refuseExplicitZero(cmd, map[string]string{
				"iters": "want ≥ 1 Sinkhorn iteration",
				"tol":   "a tolerance of 0 is never met; give a negative --tol to run all --iters iterations",
			}); err != nil {
				return err
			}
			if iters < 0 {
				return fmt.Errorf("--iters %d: want ≥ 1", iters)
			}
			if len(in.measures) != 2 {
				return fmt.Errorf("want two measures, got %d", len(in.measures))
			}
			l, err := lf.lattice(in.shape, in.shapeSrc, len(in.measures[0]), in.names[0])
			if err != nil {
				return err
			}
			if !(eps > 0) {
				return fmt.Errorf("--eps: %g is not positive", eps)
			}
			abs := eps
			if !absEps {
				abs *= l.CostUnit()
			}
			k, err := ot.NewLatticeKernel(l, abs)
			if err != nil {
				return err
			}
			start := time.Now()
			o := otDistanceOutput{Shape: l.Shape(), Eps: eps, EpsAbsolute: abs, LogDomain: logDom}
			r, err := ot.Sinkhorn(k, in.measures[0], in.measures[1], ot.SinkhornOptions{Log: logDom, MaxIter: iters, Tol: tol})
			if errors.Is(err, ot.ErrNonFinite) && !logDom {
				// The scaling form overflowed at this ε: the log domain computes
				// the same transport without overflow.
				o.LogDomain, o.Switched = true, "the scaling form overflowed at this ε"
				r, err = ot.Sinkhorn(k, in.measures[0], in.measures[1], ot.SinkhornOptions{Log: true, MaxIter: iters, Tol: tol})
			}
			sinkErr := err
			if err == nil {
				o.EntropicCost, o.Objective, o.Iterations = r.Cost, r.Objective, r.Iterations
				o.MarginalError, o.Converged = r.MarginalError, r.Converged
			}
			n := l.Len()
			switch exact {
			case "auto", "always":
				if exact == "auto" && n*n > ot.MaxExactEntries {
					break
				}
				v, _, err := ot.ExactCost(l.CostMatrix(), n, n, in.measures[0], in.measures[1])
				if err != nil {
					return err
				}
				o.ExactW2Sq = &v
			case "never":
			default:
				return fmt.Errorf("--exact: %q is not auto, always or never", exact)
			}
			o.Seconds = time.Since(start).Seconds()
			if sinkErr != nil {
				// Print what could be computed (the exact W2²), then fail.
				if o.ExactW2Sq != nil {
					if err := writeJSON(out, o); err != nil {
						return err
					}
				}
				return fmt.Errorf("entropic cost: %w", sinkErr)
			}
			if err := writeJSON(out, o); err != nil {
				return err
			}
			if !o.Converged && tol >= 0 {
				return unconverged(cmd, strict, "Sinkhorn", o.Iterations, o.MarginalError, tol)
			}
			return nil
		},
	}
	lf.register(dist)
	dist.Flags().Float64Var(&eps, "eps", ot.DefaultEps, "entropic regularization, in squared-smallest-spacing units")
	dist.Flags().BoolVar(&absEps, "abs-eps", false, "take --eps in raw cost units (POT's reg)")
	dist.Flags().BoolVar(&logDom, "log", false, "log-domain Sinkhorn (use for small ε)")
	countVar(dist.Flags(), &iters, "iters", 10000, "iterations", "maximum Sinkhorn iterations")
	dist.Flags().Float64Var(&tol, "tol", 1e-9, "stop when the marginal error is below this")
	dist.Flags().StringVar(&exact, "exact", "auto", "exact W2² by LP: auto (n² ≤ 40000) | always | never")
	dist.Flags().StringVarP(&out, "out", "o", "-", "output JSON file (- for stdout)")
	dist.Flags().BoolVar(&strict, "strict", false, "exit non-zero (after writing --out) when Sinkhorn stops at --iters without reaching --tol; without it, a warning on stderr")
	deprecatedAlias(dist, "output", "out")
	cmd.AddCommand(dist)
	return cmd
}

func init() {
	rootCmd.AddCommand(newOTCmd())
}
