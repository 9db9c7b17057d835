package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sbinet/npyio/npy"
	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// rewardDistanceOutput is the JSON written by "fedirl reward distance" for
// one coverage (with --coverage all: one per coverage, keyed by name).
type rewardDistanceOutput struct {
	// Coverage is the coverage's name (model, uniform, demonstrations).
	Coverage string `json:"coverage"`
	// EPIC and Pearson are null where EPIC is undefined (--coverage all only;
	// a single coverage makes that an error).
	EPIC    *float64 `json:"epic"`
	Pearson *float64 `json:"pearson"`
	// Undefined says why EPIC is undefined under this coverage.
	Undefined string `json:"undefined,omitempty"`
	// Description spells out the coverage on this MDP.
	Description string `json:"description"`
}

// newRewardCmd builds "fedirl reward" and its subcommand "distance".
func newRewardCmd() *cobra.Command {
	reward := &cobra.Command{
		Use:   "reward",
		Short: "Compare learned rewards",
	}
	var spec, out, coverage, demos string
	distance := &cobra.Command{
		Use:   "distance --spec mdp.json A B [--coverage model|uniform|demonstrations|all] [--demos demos.jsonl] [--out result.json]",
		Short: "EPIC distance between two rewards on one tabular MDP",
		Long: `distance prints the EPIC distance (Gleave et al. 2021) between rewards A and B
on the MDP of --spec ("fedirl irl"'s spec, features included): the Pearson
correlation ρ of the canonicalized rewards, which removes potential shaping,
turned into sqrt((1−ρ)/2) ∈ [0,1] (0: same up to shaping and positive scale,
1: opposite). Computed exactly, no sampling. EPIC's verdict can depend on the
coverage (the states it canonicalizes over and the transitions it correlates
on); --coverage picks one:
  model           (default) s uniform over the non-terminal states, a uniform,
                  s' from the MDP's own transitions; terminal potential 0
  uniform         evaluating-rewards' default: canonicalize over all states,
                  correlate uniformly over all (s, a, s') triples
  demonstrations  s from the state visits of --demos (the states where an
                  action is taken), a uniform, s' from the MDP's transitions
  all             all three, keyed by name (needs --demos)
With terminal states a constant shift of a reward is a real change (it moves
the value of ending an episode). A reward constant after canonicalization on
the coverage's support (e.g. a per-step reward constant on demonstrations that
never terminate) has no EPIC: an error for one coverage, null with the reason
under --coverage all, never 0.

A and B are each one of
  θ.json   a JSON array of d numbers or an object with a "theta" array
           (e.g. the output of "fedirl irl", or a gridworld export's truth.json),
           turned into R(s,a) = θᵀφ(s,a) with the spec's features;
  θ.npy    a float64 vector of length d, likewise;
  r.npy    a float64 vector of length states*actions (row s*actions+a) or an
           array of shape (states, actions): the reward itself.
Rows of terminal states are ignored. --demos takes the formats of "fedirl irl"
(JSON Lines or .npz). The output is JSON {"coverage": …, "epic": …,
"pearson": …, "description": …}, or with --coverage all an object of three
of them keyed by coverage.`,
		Example: `  fedirl reward distance --spec /tmp/gw5/mdp.json /tmp/gw5/truth.json theta.json
  fedirl reward distance --spec mdp.json --coverage all --demos demos.jsonl truth.json theta.json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec == "" {
				return fmt.Errorf("reward distance: --spec is required")
			}
			covs, err := distanceCoverages(coverage, demos)
			if err != nil {
				return err
			}
			m, phi, err := irl.LoadSpec(spec)
			if err != nil {
				return err
			}
			var r [2][]float64
			for j, path := range args {
				if r[j], err = readRewardArg(path, m, phi); err != nil {
					return err
				}
			}
			var visits []float64
			var nDemos int
			if demos != "" {
				tr, err := irl.ReadTrajectoriesAny(demos, m)
				if err != nil {
					return err
				}
				if visits, err = irl.StateVisits(m, tr); err != nil {
					return fmt.Errorf("%s: %w", demos, err)
				}
				nDemos = len(tr)
			}
			all := map[string]rewardDistanceOutput{}
			for _, c := range covs {
				o := rewardDistanceOutput{Coverage: string(c), Description: describeCoverage(m, c, spec, demos, visits, nDemos)}
				opt := irl.EPICOptions{Coverage: c}
				if c == irl.CoverageDemonstrations {
					opt.StateWeights = visits
				}
				res, err := irl.EPIC(m, r[0], r[1], opt)
				switch {
				case err == nil:
					o.EPIC, o.Pearson = &res.Distance, &res.Pearson
				case len(covs) > 1 && errors.Is(err, irl.ErrConstantReward):
					o.Undefined = fmt.Sprintf("%s (r1) and %s (r2): %v", args[0], args[1], err)
				default:
					return fmt.Errorf("reward distance of %s (r1) and %s (r2) on %s under the %s coverage: %w", args[0], args[1], spec, c, err)
				}
				if len(covs) == 1 {
					return writeJSON(out, o)
				}
				all[string(c)] = o
			}
			return writeJSON(out, all)
		},
	}
	f := distance.Flags()
	f.StringVar(&spec, "spec", "", "MDP and feature spec (JSON, as for \"fedirl irl\"; required)")
	f.StringVar(&coverage, "coverage", string(irl.CoverageModel), "EPIC coverage: model, uniform, demonstrations or all (see above)")
	f.StringVar(&demos, "demos", "", "demonstrations on the spec's MDP (as for \"fedirl irl\"); for --coverage demonstrations or all")
	f.StringVarP(&out, "out", "o", "-", `output JSON file ("-" = stdout)`)
	reward.AddCommand(distance)
	return reward
}

// distanceCoverages resolves --coverage and checks that --demos is given
// exactly when a coverage needs it.
func distanceCoverages(name, demos string) ([]irl.Coverage, error) {
	var covs []irl.Coverage
	if name == "all" {
		covs = irl.Coverages()
	} else {
		c, err := irl.ParseCoverage(name)
		if err != nil {
			return nil, fmt.Errorf("reward distance: --coverage %q: want model, uniform, demonstrations or all", name)
		}
		covs = []irl.Coverage{c}
	}
	needs := slices.Contains(covs, irl.CoverageDemonstrations)
	switch {
	case needs && demos == "":
		return nil, fmt.Errorf("reward distance: --coverage %s needs --demos (the demonstrations coverage's state visits)", name)
	case !needs && demos != "":
		return nil, fmt.Errorf("reward distance: --demos %s is used only by --coverage demonstrations or all, not %s", demos, name)
	}
	return covs, nil
}

// describeCoverage spells out coverage c on m in one sentence.
func describeCoverage(m *mdp.MDP, c irl.Coverage, spec, demos string, visits []float64, nDemos int) string {
	nonTerminal := 0
	for s := 0; s < m.NumStates; s++ {
		if !m.IsTerminal(s) {
			nonTerminal++
		}
	}
	switch c {
	case irl.CoverageUniform:
		return fmt.Sprintf("canonicalized over all %d states uniformly, a uniform over the %d actions; Pearson uniform over all %d×%d×%d (s,a,s') triples (evaluating-rewards' default); exact closed-form sums",
			m.NumStates, m.NumActions, m.NumStates, m.NumActions, m.NumStates)
	case irl.CoverageDemonstrations:
		states, steps := 0, 0.0
		for s, v := range visits {
			if v > 0 && !m.IsTerminal(s) {
				states++
			}
			steps += v
		}
		return fmt.Sprintf("s from the state visits of the %d trajectories of %s (%d distinct non-terminal states, %.0f steps), a uniform over the %d actions, s' ~ P(·|s,a) of %s; exact sums over the stored transitions",
			nDemos, filepath.Base(demos), states, steps, m.NumActions, filepath.Base(spec))
	}
	return fmt.Sprintf("s uniform over the %d non-terminal states, a uniform over the %d actions, s' ~ P(·|s,a) of %s; exact sums over the stored transitions",
		nonTerminal, m.NumActions, filepath.Base(spec))
}

func init() { rootCmd.AddCommand(newRewardCmd()) }

// readRewardArg reads a reward argument of "fedirl reward distance": θ (.json
// or a length-d .npy, mapped through phi) or a per-pair reward (.npy of length
// S*A or shape (S, A)). Errors name the file and what is wrong.
func readRewardArg(path string, m *mdp.MDP, phi *mat.Dense) ([]float64, error) {
	S, A := m.NumStates, m.NumActions
	_, d := phi.Dims()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		theta, err := readTheta(path)
		if err != nil {
			return nil, err
		}
		if len(theta) != d {
			return nil, fmt.Errorf("%s: theta has %d entries, but the spec's features have d = %d columns", path, len(theta), d)
		}
		return thetaReward(phi, theta), nil
	case ".npy":
		x, shape, err := readNPYFloat64(path, S, A, d)
		if err != nil {
			return nil, err
		}
		for i, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: entry %d = %v is not finite", path, i, v)
			}
		}
		switch {
		case len(shape) == 2:
			return x, nil // (S, A), checked by readNPYFloat64
		case d == S*A:
			return nil, fmt.Errorf("%s: a vector of length %d is ambiguous, as d = states*actions = %d: save a reward with shape (%d, %d) or θ as JSON {\"theta\": [...]}", path, len(x), d, S, A)
		case len(x) == d:
			return thetaReward(phi, x), nil
		default:
			return x, nil
		}
	default:
		return nil, fmt.Errorf("%s: unknown extension (want θ as .json, or θ or a reward as .npy)", path)
	}
}

// readNPYFloat64 reads a float64 .npy array that is a vector of length d or
// S*A, or an (S, A) matrix, returned row-major; any other shape is refused
// before its data are read.
func readNPYFloat64(path string, S, A, d int) ([]float64, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r, err := readNPYHeader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: not a .npy file: %w", path, err)
	}
	shape := r.Header.Descr.Shape
	ok := (len(shape) == 1 && (shape[0] == d || shape[0] == S*A)) || (len(shape) == 2 && shape[0] == S && shape[1] == A)
	if !ok {
		return nil, nil, fmt.Errorf("%s: shape %v: want θ of length d = %d, a reward of length states*actions = %d, or a reward of shape (%d, %d)", path, shape, d, S*A, S, A)
	}
	// npyio reads a truncated file as zeros: check the data size first (its
	// reader consumes exactly the header, so the offset is the data's start).
	if off, err := f.Seek(0, io.SeekCurrent); err == nil {
		if st, err := f.Stat(); err == nil && strings.HasSuffix(r.Header.Descr.Type, "f8") && st.Size()-off != 8*int64(numElems(shape)) {
			return nil, nil, fmt.Errorf("%s: %d data bytes after the header, want 8×%d for shape %v", path, st.Size()-off, numElems(shape), shape)
		}
	}
	var x []float64
	if err := r.Read(&x); err != nil {
		if errors.Is(err, npy.ErrTypeMismatch) {
			return nil, nil, fmt.Errorf("%s: dtype %s: want float64 (<f8)", path, r.Header.Descr.Type)
		}
		return nil, nil, fmt.Errorf("%s: reading %s array: %w", path, r.Header.Descr.Type, err)
	}
	if len(x) != S*A && len(x) != d {
		return nil, nil, fmt.Errorf("%s: read %d values, want %d", path, len(x), numElems(shape))
	}
	if len(shape) == 2 && r.Header.Descr.Fortran {
		rowMajor := make([]float64, len(x))
		for a := 0; a < A; a++ {
			for s := 0; s < S; s++ {
				rowMajor[s*A+a] = x[a*S+s]
			}
		}
		x = rowMajor
	}
	return x, shape, nil
}

// readNPYHeader parses a .npy header with npyio, turning the panics its
// parser raises on some malformed headers into an error.
func readNPYHeader(f io.Reader) (r *npy.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("malformed header (%v)", p)
		}
	}()
	return npy.NewReader(f)
}

// numElems is the product of shape.
func numElems(shape []int) int {
	n := 1
	for _, v := range shape {
		n *= v
	}
	return n
}

// thetaReward returns R = φθ, one entry per state–action pair.
func thetaReward(phi *mat.Dense, theta []float64) []float64 {
	rows, _ := phi.Dims()
	r := make([]float64, rows)
	mat.NewVecDense(rows, r).MulVec(phi, mat.NewVecDense(len(theta), theta))
	return r
}
