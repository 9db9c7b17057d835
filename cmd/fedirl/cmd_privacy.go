package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// flagError rewrites a *privacy.ParamError to name the command-line flag of
// its field (flags maps a field name to a flag name); other errors are
// returned unchanged.
func flagError(err error, flags map[string]string) error {
	var pe *privacy.ParamError
	if errors.As(err, &pe) {
		if name, ok := flags[pe.Field]; ok {
			return fmt.Errorf("--%s %v: want %s", name, pe.Value, pe.Want)
		}
	}
	return err
}

// sigmaOutput is what "fedirl privacy sigma" prints (encoding/json writes
// each float64 in the shortest form that parses back to the same bits).
type sigmaOutput struct {
	Sigma float64 `json:"sigma"`
	// PerClip is 2σ, the same noise as Opacus' or TF Privacy's
	// noise_multiplier (noise std per unit of C rather than of Δ = 2C).
	PerClip    float64            `json:"noise_multiplier_per_clip"`
	Accounting privacy.Accounting `json:"accounting"`
	Clip       *float64           `json:"clip,omitempty"`
	NoiseStd   *float64           `json:"noise_std,omitempty"`
}

// newPrivacyCmd builds "fedirl privacy" and "fedirl privacy sigma".
func newPrivacyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "privacy",
		Short: "Differential-privacy accounting for the θ a client sends",
	}
	var (
		eps, delta, clip float64
		rounds           int
		conversion       string
	)
	sigma := &cobra.Command{
		Use:   "sigma",
		Short: "Noise multiplier σ (sensitivity 1) for a target (ε, δ) over R rounds, as JSON",
		Long: `Prints {"sigma": σ, "noise_multiplier_per_clip": 2σ, "accounting": {...}}: the
smallest noise multiplier σ of a sensitivity-1 Gaussian mechanism such that
--rounds releases are (ε, δ)-DP, at full float64 precision, and how it was
accounted (pkg/privacy).

The convention: σ multiplies the sensitivity Δ = 2C of a θ clipped to norm C
(neighbours replace a client's whole data set), so the noise standard
deviation is σ·2C. Opacus' and TF Privacy's noise_multiplier z multiplies C
itself (their neighbours add or remove one example, sensitivity C): noise std
z·C. The same noise is z = 2σ (printed as noise_multiplier_per_clip); the same
(ε, δ), each under its own neighbour relation, is z = σ.

Accounting over R rounds (--conversion):

  analytic  (default) one release: the analytic Gaussian mechanism (Balle & Wang
            2018), bisection on δ(ε; σ) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ);
            R releases compose exactly to one with multiplier σ/√R, so σ = √R·σ₁
  zcdp      ρ = R/(2σ²) (zCDP composition) with ε = ρ + 2√(ρ ln(1/δ))

A client clips θ to norm C and adds N(0, (σ·2C)² I); with --clip the output also
gives that noise standard deviation.`,
		Example: `  fedirl privacy sigma --epsilon 1 --delta 1e-5
  fedirl privacy sigma --epsilon 2 --delta 1e-5 --rounds 10 --conversion zcdp --clip 0.05`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := map[string]string{"epsilon": "epsilon", "delta": "delta", "rounds": "rounds", "conversion": "conversion", "clip": "clip"}
			s, acc, err := privacy.Calibrate(eps, delta, rounds, privacy.Conversion(conversion))
			if err != nil {
				return flagError(err, names)
			}
			out := sigmaOutput{Sigma: s, PerClip: 2 * s, Accounting: acc}
			if cmd.Flags().Changed("clip") {
				if err := (privacy.Params{Epsilon: eps, Delta: delta, Clip: clip, Rounds: rounds, Conversion: privacy.Conversion(conversion)}).Validate(); err != nil {
					return flagError(err, names)
				}
				std := s * 2 * clip
				out.Clip, out.NoiseStd = &clip, &std
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		},
	}
	f := sigma.Flags()
	f.Float64Var(&eps, "epsilon", 0, "target ε over all rounds (required, > 0)")
	f.Float64Var(&delta, "delta", 0, "target δ over all rounds (required, in (0, 1))")
	f.IntVar(&rounds, "rounds", 1, "number of releases R (a task's rounds)")
	f.StringVar(&conversion, "conversion", string(privacy.ConversionAnalytic), "accounting over rounds: analytic or zcdp")
	f.Float64Var(&clip, "clip", 0, "clipping norm C: also print the noise standard deviation σ·2C")
	_ = sigma.MarkFlagRequired("epsilon")
	_ = sigma.MarkFlagRequired("delta")
	cmd.AddCommand(sigma, newPrivacyLedgerCmd())
	return cmd
}

// newPrivacyLedgerCmd builds "fedirl privacy ledger".
func newPrivacyLedgerCmd() *cobra.Command {
	var (
		file   string
		delta  float64
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "What a client has spent: per-task and total (ε, δ) over every release in its privacy ledger",
		Long: `Reads the privacy ledger a client keeps (fedirl client --dp-ledger) and prints,
per task, the rounds released and acknowledged, the ε of the releases so far at
the task's δ and the task's declared (ε, δ), then the total over every release.

The total is the exact composition of Gaussian releases (Gaussian differential
privacy, Dong, Roth & Su 2019): releases with noise multipliers σ_j compose to
one Gaussian release with multiplier 1/√(Σ 1/σ_j²), whose ε at δ is read off the
analytic Gaussian privacy profile (Balle & Wang 2018). It is printed at --delta,
or at the sum of the tasks' δ, beside the basic composition Σ ε_t (at Σ δ_t), a
looser bound, and the committed ε once every begun task has released all its
declared rounds (what --dp-budget is checked against).`,
		Example: `  fedirl privacy ledger --ledger alice-ledger.db
  fedirl privacy ledger --ledger alice-ledger.db --delta 1e-5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("--ledger is required")
			}
			if cmd.Flags().Changed("delta") && !(delta > 0 && delta < 1) {
				return fmt.Errorf("--delta %v: want a value in (0, 1)", delta)
			}
			if _, err := os.Stat(file); err != nil {
				return fmt.Errorf("--ledger: %w", err)
			}
			l, err := privacy.OpenLedger(file)
			if err != nil {
				return fmt.Errorf("--ledger: %w", err)
			}
			s, err := l.Summary(delta)
			if err != nil {
				return fmt.Errorf("--ledger %s: %w", file, err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return printLedger(cmd.OutOrStdout(), file, s)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "ledger", "", "the client's privacy ledger file (required)")
	f.Float64Var(&delta, "delta", 0, "report the total ε at this δ (default: the sum of the tasks' δ)")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

// printLedger writes a ledger summary as a table.
func printLedger(w io.Writer, file string, s privacy.LedgerSummary) error {
	fmt.Fprintf(w, "privacy ledger %s: %d tasks, %d releases\n\n", file, len(s.Tasks), s.Releases)
	if len(s.Tasks) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tclient\treleased\tacknowledged\tε so far\tdeclared (ε, δ)\tσ\tC\tlast release")
	for _, t := range s.Tasks {
		last := "-"
		if !t.Last.IsZero() {
			last = t.Last.Format(time.RFC3339)
		}
		d := t.Declaration
		fmt.Fprintf(tw, "%s\t%s\t%d of %d\t%d\t%.4g\t(%v, %v)\t%.6g\t%v\t%s\n", t.Task, t.Client, t.Releases, d.Rounds,
			t.Acknowledged, t.Epsilon, d.Epsilon, d.Delta, d.Sigma, d.Clip, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntotal over %d releases: ε = %.4g at δ = %.3g (exact composition)\n", s.Releases, s.Epsilon, s.Delta)
	fmt.Fprintf(w, "basic composition of the tasks: Σ ε = %.4g at Σ δ = %.3g\n", s.EpsilonSum, s.DeltaSum)
	fmt.Fprintf(w, "committed (every begun task's declared rounds): ε = %.4g at δ = %.3g\n", s.CommittedEpsilon, s.Delta)
	fmt.Fprintf(w, "accounting: %s\n", s.Composition)
	return nil
}

func init() { rootCmd.AddCommand(newPrivacyCmd()) }

// dpFlags are the client's privacy flags.
type dpFlags struct {
	eps, delta, clip    float64
	conversion          string
	ledger              string
	budget, budgetDelta float64
}

func (d *dpFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float64Var(&d.eps, "dp-epsilon", 0, "send θ with (ε, δ)-differential privacy over the task's rounds: ε (> 0; with --dp-delta and --dp-ledger)")
	f.Float64Var(&d.delta, "dp-delta", 0, "δ of the differential privacy, in (0, 1)")
	f.Float64Var(&d.clip, "dp-clip", 0, "clip θ to this L2 norm C before adding N(0, (σ·2C)² I) noise (> 0); only for a task that lets clients choose C (default: the task's C)")
	f.StringVar(&d.conversion, "dp-conversion", string(privacy.ConversionAnalytic), "accounting over rounds: analytic or zcdp")
	f.StringVar(&d.ledger, "dp-ledger", "", "this client's privacy ledger (a file, created if missing; required with --dp-epsilon): every noised θ is recorded there before it is sent, re-sent as it is after a restart, and counted by \"fedirl privacy ledger\"")
	f.Float64Var(&d.budget, "dp-budget", 0, "refuse, before learning, a task that would take the exact composition of all the ledger's releases above this ε (with --dp-budget-delta)")
	f.Float64Var(&d.budgetDelta, "dp-budget-delta", 0, "the δ at which --dp-budget is checked, in (0, 1)")
}

// dpFlagNames maps privacy.Params fields to the client's flags.
var dpFlagNames = map[string]string{"epsilon": "dp-epsilon", "delta": "dp-delta", "clip": "dp-clip", "conversion": "dp-conversion"}

// params returns the client's privacy parameters, or nil when no --dp-*
// flag is set; setting one of epsilon and delta without the other is an
// error naming the missing flag, and so is a missing --dp-ledger. Clip is 0
// (the task's C) without --dp-clip.
func (d *dpFlags) params(cmd *cobra.Command) (*privacy.Params, error) {
	names := []string{"dp-epsilon", "dp-delta"}
	var set, missing []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			set = append(set, "--"+n)
		} else {
			missing = append(missing, "--"+n)
		}
	}
	if len(set) == 0 {
		for _, n := range []string{"dp-clip", "dp-conversion", "dp-ledger", "dp-budget", "dp-budget-delta"} {
			if cmd.Flags().Changed(n) {
				return nil, fmt.Errorf("--%s needs --dp-epsilon and --dp-delta", n)
			}
		}
		return nil, nil
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s given without %s: differential privacy needs both", strings.Join(set, ", "), strings.Join(missing, ", "))
	}
	p := privacy.Params{Epsilon: d.eps, Delta: d.delta, Clip: d.clip, Conversion: privacy.Conversion(d.conversion)}
	check := p
	if !cmd.Flags().Changed("dp-clip") {
		check.Clip = 1 // the task's C, checked when the task is fetched
	}
	if err := check.Validate(); err != nil {
		return nil, flagError(err, dpFlagNames)
	}
	if d.ledger == "" {
		return nil, errors.New("--dp-epsilon needs --dp-ledger FILE: the client records every noised θ there before sending it, so that a restarted client re-sends it instead of drawing new noise (a second release), and counts what it has spent")
	}
	return &p, nil
}

// budget returns the client's budget, or nil when --dp-budget is not set.
func (d *dpFlags) budgetOf(cmd *cobra.Command) (*privacy.Budget, error) {
	fl := cmd.Flags()
	if !fl.Changed("dp-budget") && !fl.Changed("dp-budget-delta") {
		return nil, nil
	}
	if !fl.Changed("dp-budget") || !fl.Changed("dp-budget-delta") {
		return nil, errors.New("--dp-budget and --dp-budget-delta go together")
	}
	b := &privacy.Budget{Epsilon: d.budget, Delta: d.budgetDelta}
	if err := b.Validate(); err != nil {
		return nil, flagError(err, map[string]string{"epsilon": "dp-budget", "delta": "dp-budget-delta"})
	}
	return b, nil
}

// clientPrivacy returns the client's privacy configuration (noise from
// crypto/rand, its ledger opened), or nil when the client adds no noise.
func (d *dpFlags) clientPrivacy(cmd *cobra.Command) (*federation.ClientPrivacy, error) {
	p, err := d.params(cmd)
	if err != nil || p == nil {
		return nil, err
	}
	b, err := d.budgetOf(cmd)
	if err != nil {
		return nil, err
	}
	l, err := privacy.OpenLedger(d.ledger)
	if err != nil {
		return nil, fmt.Errorf("--dp-ledger: %w", err)
	}
	return &federation.ClientPrivacy{Params: *p, Ledger: l, Budget: b}, nil
}
