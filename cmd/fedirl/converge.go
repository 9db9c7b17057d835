package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// unconverged is the loud-failure rule of the iterative solvers' commands
// (barycenter, ot distance): a solver that stopped at its iteration cap
// without reaching its tolerance is reported on stderr with the error it
// reached and the flags that change the outcome; with --strict the command
// fails instead (its output has already been written, for inspection).
func unconverged(cmd *cobra.Command, strict bool, solver string, iters int, marginalErr, tol float64) error {
	msg := fmt.Sprintf("%s did not converge: stopped at the cap of %d iterations with marginal error %.3g > --tol %g; raise --iters, or make the problem easier (a larger --eps; --log or --method stabilized at small ε)",
		solver, iters, marginalErr, tol)
	if strict {
		return fmt.Errorf("%s (--strict)", msg)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "fedirl: warning: %s; --strict makes this an error\n", msg)
	return nil
}
