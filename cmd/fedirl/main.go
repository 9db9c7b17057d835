// Command fedirl is the command-line interface of fedirl: federated inverse
// reinforcement learning with optimal-transport reward fusion.
//
// Each subcommand lives in its own file (cmd_*.go) and registers itself on
// rootCmd from an init function. This package parses flags, shows progress and
// writes output files; all mathematics lives in the packages under pkg/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// rootCmd is the top-level "fedirl" command that every subcommand attaches to.
var rootCmd = &cobra.Command{
	Use:   "fedirl",
	Short: "Federated inverse RL with Wasserstein-barycenter reward fusion",
	Long: `fedirl learns reward functions locally on each client with MaxEnt IRL and
fuses them on a server, by parameter averaging (FedAvg) or by an entropically
regularized Wasserstein barycenter of the shift-normalized rewards.

Start with:  fedirl reproduce gridworld`,
	SilenceUsage:  true,
	SilenceErrors: true,
	// Every output path is checked before any work starts (outputs.go).
	PersistentPreRunE: func(cmd *cobra.Command, args []string) error { return checkOutputs(cmd) },
}

// errInterrupted is returned by a command stopped by Ctrl-C (SIGINT).
var errInterrupted = errors.New("interrupted")

func main() {
	if err := rootCmd.Execute(); err != nil {
		if errors.Is(err, errInterrupted) || errors.Is(err, context.Canceled) {
			// Ctrl-C cancels the command's context; the errors it causes
			// all end in "context canceled", which says nothing more.
			line := "fedirl: interrupted"
			if msg, _, ok := strings.Cut(err.Error(), ": "+errInterrupted.Error()); ok && errors.Is(err, errInterrupted) && msg != "" {
				line += " (" + msg + ")" // what was stopped and what is kept
			}
			fmt.Fprintln(os.Stderr, line)
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "fedirl:", err)
		os.Exit(1)
	}
}
