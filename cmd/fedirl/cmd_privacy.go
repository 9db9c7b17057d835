package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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
	Sigma      float64            `json:"sigma"`
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
		Long: `Prints {"sigma": σ, "accounting": {...}}: the smallest noise multiplier σ of a
sensitivity-1 Gaussian mechanism such that --rounds releases are (ε, δ)-DP, at
full float64 precision, and how it was accounted (pkg/privacy):

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
			out := sigmaOutput{Sigma: s, Accounting: acc}
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
	cmd.AddCommand(sigma)
	return cmd
}

func init() { rootCmd.AddCommand(newPrivacyCmd()) }

// dpFlags are the client's privacy flags.
type dpFlags struct {
	eps, delta, clip float64
	conversion       string
}

func (d *dpFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float64Var(&d.eps, "dp-epsilon", 0, "send θ with (ε, δ)-differential privacy over the task's rounds: ε (> 0; with --dp-delta and --dp-clip)")
	f.Float64Var(&d.delta, "dp-delta", 0, "δ of the differential privacy, in (0, 1)")
	f.Float64Var(&d.clip, "dp-clip", 0, "clip θ to this L2 norm C before adding N(0, (σ·2C)² I) noise (> 0)")
	f.StringVar(&d.conversion, "dp-conversion", string(privacy.ConversionAnalytic), "accounting over rounds: analytic or zcdp")
}

// params returns the client's privacy parameters, or nil when no --dp-*
// flag is set; setting some but not all of epsilon, delta and clip is an
// error naming the missing flag.
func (d *dpFlags) params(cmd *cobra.Command) (*privacy.Params, error) {
	names := []string{"dp-epsilon", "dp-delta", "dp-clip"}
	var set, missing []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			set = append(set, "--"+n)
		} else {
			missing = append(missing, "--"+n)
		}
	}
	if len(set) == 0 {
		if cmd.Flags().Changed("dp-conversion") {
			return nil, errors.New("--dp-conversion needs --dp-epsilon, --dp-delta and --dp-clip")
		}
		return nil, nil
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s given without %s: differential privacy needs all three", strings.Join(set, ", "), strings.Join(missing, ", "))
	}
	p := privacy.Params{Epsilon: d.eps, Delta: d.delta, Clip: d.clip, Conversion: privacy.Conversion(d.conversion)}
	if err := p.Validate(); err != nil {
		return nil, flagError(err, map[string]string{"epsilon": "dp-epsilon", "delta": "dp-delta", "clip": "dp-clip", "conversion": "dp-conversion"})
	}
	return &p, nil
}
