package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/ot"
)

// otLatticeFlags are the lattice flags shared by "barycenter" and "ot distance".
type otLatticeFlags struct {
	shape, spacing, periodic, categorical, axisWeights string
}

func (f *otLatticeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.shape, "shape", "", `lattice shape, slowest axis first, e.g. "9,9,5,5,5" (default: from the bundle or .npy header, else 1-D)`)
	cmd.Flags().StringVar(&f.spacing, "spacing", "1", `grid spacing: one value for all axes or one per axis ("1,1,0.5")`)
	cmd.Flags().StringVar(&f.periodic, "periodic", "", `comma-separated indices of periodic axes (period = size × spacing; for angles)`)
	cmd.Flags().StringVar(&f.categorical, "categorical", "", `comma-separated indices of categorical axes (0/1 distance)`)
	cmd.Flags().StringVar(&f.axisWeights, "axis-weights", "", `per-axis cost weights ("1,1,4"); default all 1`)
}

// lattice builds the lattice from the flags, with shape taken from the
// flag or else from fallback (the input's own shape, read from
// fallbackSource). A --shape that contradicts a multi-dimensional input
// shape is refused rather than silently reinterpreting the data.
func (f *otLatticeFlags) lattice(fallback []int, fallbackSource string, n int, source string) (ot.Lattice, error) {
	shape := fallback
	if f.shape != "" {
		s, err := otParseInts(f.shape)
		if err != nil {
			return ot.Lattice{}, fmt.Errorf("--shape: %w", err)
		}
		if len(fallback) > 1 && !slices.Equal(s, fallback) {
			return ot.Lattice{}, fmt.Errorf("--shape %s contradicts the shape %v of %s: leave --shape out, or save the array with that shape", f.shape, fallback, fallbackSource)
		}
		shape = s
	}
	if len(shape) == 0 {
		shape = []int{n}
	}
	total := 1
	for i, s := range shape {
		if s < 1 {
			return ot.Lattice{}, fmt.Errorf("--shape: axis %d has size %d", i, s)
		}
		total *= s
	}
	if total != n {
		return ot.Lattice{}, fmt.Errorf("lattice shape %v has %d points but %s has %d entries", shape, total, source, n)
	}
	sp, err := otParseFloats(f.spacing)
	if err != nil {
		return ot.Lattice{}, fmt.Errorf("--spacing: %w", err)
	}
	if len(sp) != 1 && len(sp) != len(shape) {
		return ot.Lattice{}, fmt.Errorf("--spacing: %d values for %d axes", len(sp), len(shape))
	}
	var aw []float64
	if f.axisWeights != "" {
		if aw, err = otParseFloats(f.axisWeights); err != nil {
			return ot.Lattice{}, fmt.Errorf("--axis-weights: %w", err)
		}
		if len(aw) != len(shape) {
			return ot.Lattice{}, fmt.Errorf("--axis-weights: %d values for %d axes", len(aw), len(shape))
		}
	}
	l := ot.Lattice{Axes: make([]ot.Axis, len(shape))}
	for k, n := range shape {
		h := sp[0]
		if len(sp) > 1 {
			h = sp[k]
		}
		if !(h > 0) || math.IsInf(h, 0) {
			return ot.Lattice{}, fmt.Errorf("--spacing: axis %d spacing %g is not positive", k, h)
		}
		l.Axes[k] = ot.UniformAxis(n, h)
		if aw != nil {
			if !(aw[k] > 0) {
				return ot.Lattice{}, fmt.Errorf("--axis-weights: axis %d weight %g is not positive", k, aw[k])
			}
			l.Axes[k].Weight = aw[k]
		}
	}
	for _, spec := range []struct {
		flag, val string
		set       func(a *ot.Axis)
	}{
		{"--periodic", f.periodic, func(a *ot.Axis) { a.Period = float64(a.Len()) * (a.Coords[min(1, a.Len()-1)] - a.Coords[0]) }},
		{"--categorical", f.categorical, func(a *ot.Axis) { a.Categorical = true }},
	} {
		if spec.val == "" {
			continue
		}
		idx, err := otParseInts(spec.val)
		if err != nil {
			return ot.Lattice{}, fmt.Errorf("%s: %w", spec.flag, err)
		}
		for _, k := range idx {
			if k < 0 || k >= len(shape) {
				return ot.Lattice{}, fmt.Errorf("%s: axis %d out of range [0, %d)", spec.flag, k, len(shape))
			}
			spec.set(&l.Axes[k])
		}
	}
	return l, l.Validate()
}

// otInput is the set of measures read from the command line.
type otInput struct {
	measures [][]float64
	names    []string // where each measure came from, for errors
	shape    []int    // from a bundle or .npy header, if any
	shapeSrc string   // the file that gave shape
	weights  []float64
}

// otBundle is the single-file JSON input of "fedirl barycenter".
type otBundle struct {
	Shape    []int             `json:"shape"`
	Measures []json.RawMessage `json:"measures"`
	Weights  []float64         `json:"weights"`
}

// otReadInputs reads one measure per file, or a JSON bundle when a single
// .json file holds an object.
func otReadInputs(paths []string) (*otInput, error) {
	in := &otInput{}
	if len(paths) == 1 && strings.EqualFold(filepath.Ext(paths[0]), ".json") {
		raw, err := os.ReadFile(paths[0])
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			var b otBundle
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&b); err != nil {
				return nil, fmt.Errorf("%s: %w", paths[0], err)
			}
			if len(b.Measures) == 0 {
				return nil, fmt.Errorf("%s: no \"measures\"", paths[0])
			}
			for i, m := range b.Measures {
				name := fmt.Sprintf("%s: measures[%d]", paths[0], i)
				x, _, err := otParseJSONArray(m)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				in.measures = append(in.measures, x)
				in.names = append(in.names, name)
			}
			in.shape, in.shapeSrc, in.weights = b.Shape, paths[0], b.Weights
			return in, in.check()
		}
	}
	for _, p := range paths {
		x, shape, err := otReadMeasureFile(p)
		if err != nil {
			return nil, err
		}
		in.measures = append(in.measures, x)
		in.names = append(in.names, p)
		if in.shape == nil && len(shape) > 1 {
			in.shape, in.shapeSrc = shape, p
		} else if len(shape) > 1 && !slices.Equal(shape, in.shape) {
			return nil, fmt.Errorf("%s has shape %v but %s has shape %v", p, shape, in.shapeSrc, in.shape)
		}
	}
	return in, in.check()
}

// check validates every measure and that all have the same length.
func (in *otInput) check() error {
	for i, m := range in.measures {
		if err := ot.CheckMeasure(m); err != nil {
			return fmt.Errorf("%s: %w", in.names[i], err)
		}
		if len(m) != len(in.measures[0]) {
			return fmt.Errorf("%s: has %d entries but %s has %d", in.names[i], len(m), in.names[0], len(in.measures[0]))
		}
	}
	if in.weights != nil && len(in.weights) != len(in.measures) {
		return fmt.Errorf("%d weights for %d measures", len(in.weights), len(in.measures))
	}
	return nil
}

// otReadMeasureFile reads a measure from a .json array, a .npy array or a
// .csv/.txt table (flattened row-major), returning its entries and shape.
func otReadMeasureFile(path string) ([]float64, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var x []float64
	var shape []int
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		raw, err := os.ReadFile(path)
		if err == nil {
			x, shape, err = otParseJSONArray(raw)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	case ".npy":
		// float64, float32, int64 and int32 arrays are read (converted to
		// float64); any other dtype is refused naming it.
		a, err := npy.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		x, shape = a.Values(), a.Shape
	case ".csv", ".txt", ".tsv":
		x, shape, err = otParseCSV(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		return nil, nil, fmt.Errorf("%s: unknown extension (want .json, .npy or .csv)", path)
	}
	return x, shape, nil
}

// otParseJSONArray parses a flat or nested rectangular JSON array of numbers.
// A flat array decodes straight into []float64 (a 20-million-number file
// in seconds, without a generic value per number); anything else is refused
// by the kind of value found, never by dumping it.
func otParseJSONArray(raw []byte) ([]float64, []int, error) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return nil, nil, errors.New("invalid JSON: the file is empty")
	case t[0] == '{':
		return nil, nil, errors.New(`holds a JSON object, not an array of numbers (a measure is a JSON array; a bundle {"shape", "measures", "weights"} is given alone; an MDP spec goes to "fedirl irl --spec")`)
	case t[0] != '[':
		return nil, nil, fmt.Errorf("invalid JSON: %w", jsonError(raw, json.Unmarshal(raw, new(any))))
	}
	if flat, ok := parseFlatJSONNumbers(t); ok {
		return flat, []int{len(flat)}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", jsonError(raw, err))
	}
	var out []float64
	var shape []int
	var walk func(v any, depth int, path string) error
	walk = func(v any, depth int, path string) error {
		switch t := v.(type) {
		case float64:
			if depth != len(shape) {
				return fmt.Errorf("ragged array: number at %s where an array of length %d was expected", path, shape[depth])
			}
			out = append(out, t)
		case []any:
			if depth == len(shape) {
				if len(out) > 0 {
					return fmt.Errorf("ragged array: array at %s where a number was expected", path)
				}
				shape = append(shape, len(t))
			} else if shape[depth] != len(t) {
				return fmt.Errorf("ragged array: %s has length %d, want %d", path, len(t), shape[depth])
			}
			for i, e := range t {
				if err := walk(e, depth+1, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		case nil:
			return fmt.Errorf("null at %s (NaN is not valid JSON; use a number)", path)
		case string:
			return fmt.Errorf("non-number %s at %s", truncateQuoted(t), path)
		case bool:
			return fmt.Errorf("non-number %v at %s", t, path)
		default:
			return fmt.Errorf("non-number (a JSON object) at %s", path)
		}
		return nil
	}
	if err := walk(v, 0, "$"); err != nil {
		return nil, nil, err
	}
	if _, ok := v.([]any); !ok {
		return nil, nil, errors.New("want a JSON array of numbers")
	}
	return out, shape, nil
}

// otParseCSV reads a rectangular table of numbers (comma-separated; a single
// column or row is a 1-D measure); the values "NaN"/"Inf" are reported.
func otParseCSV(r io.Reader) ([]float64, []int, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("invalid CSV: %w", err)
	}
	var out []float64
	for i, rec := range recs {
		for j, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d, field %d: %q is not a number", i+1, j+1, s)
			}
			out = append(out, v)
		}
	}
	if len(recs) == 0 {
		return nil, nil, errors.New("empty CSV")
	}
	if len(recs) > 1 && len(recs[0]) > 1 {
		return out, []int{len(recs), len(recs[0])}, nil
	}
	return out, []int{len(out)}, nil
}

func otParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func otParseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// barycenterOutput is the JSON written by "fedirl barycenter".
type barycenterOutput struct {
	Barycenter    []float64 `json:"barycenter"`
	Shape         []int     `json:"shape"`
	Method        string    `json:"method"`
	LogDomain     bool      `json:"log_domain"`
	Eps           float64   `json:"eps"`
	EpsAbsolute   float64   `json:"eps_absolute"`
	Weights       []float64 `json:"weights"`
	Iterations    int       `json:"iterations"`
	MarginalError float64   `json:"marginal_error"`
	Converged     bool      `json:"converged"`
	Seconds       float64   `json:"seconds"`
}

func newBarycenterCmd() *cobra.Command {
	var (
		lf                   otLatticeFlags
		weights, method, out string
		eps, tol, momentum   float64
		step                 float64
		absEps, logDom       bool
		strict               bool
		iters, inner         int
	)
	cmd := &cobra.Command{
		Use:   "barycenter [flags] MEASURE_FILE... | BUNDLE.json",
		Short: "Entropic 2-Wasserstein barycenter of measures on a product lattice",
		Long: `barycenter computes the entropically regularized W2 barycenter of K measures on
a shared product lattice with the separable squared-Euclidean cost (time
O(n·Σ n_k) per kernel application, memory O(n·K)).

Inputs: one file per measure (.json array, flat or nested; .npy; .csv), or one
JSON bundle {"shape":[...], "measures":[[...],...], "weights":[...]}. Measures
are normalized to mass 1; entries must be finite and non-negative.

ε (--eps) is in units of the squared smallest spacing unless --abs-eps.
Methods: ibp (Benamou et al. 2015), stabilized (log-domain IBP, for small ε),
debiased (Janati et al. 2020), paper (outer × inner Sinkhorn schedule with a
mirror-descent barycenter step; defaults --iters 50 --inner 10). For small ε
(below ~0.1) use --method stabilized, or --log with debiased/paper.

Output JSON: {"barycenter", "shape", "iterations", "marginal_error", "converged",
"seconds", "weights" (normalised to sum 1), ...} to --out (default stdout).

  fedirl barycenter --shape 20,20 a.npy b.npy c.npy -o bar.json
  fedirl barycenter --method paper --eps 0.5 bundle.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := ot.ParseMethod(method)
			if err != nil {
				return fmt.Errorf("--method: %w", err)
			}
			if err := refuseExplicitZero(cmd, map[string]string{
				"iters": "want ≥ 1 iteration (leave --iters out for the default: 1000, 50 for paper)",
				"tol":   "a tolerance of 0 is never met; give a negative --tol to run all --iters iterations",
				"inner": "want ≥ 1 Sinkhorn iteration per barycenter step",
				"step":  "a step size of 0 never moves the barycenter; want > 0",
			}); err != nil {
				return err
			}
			switch {
			case iters < 0:
				return fmt.Errorf("--iters %d: want ≥ 1", iters)
			case inner < 1:
				return fmt.Errorf("--inner %d: want ≥ 1", inner)
			case !(step > 0):
				return fmt.Errorf("--step %g: want > 0", step)
			case !(momentum >= 0 && momentum < 1):
				return fmt.Errorf("--momentum %g: want in [0, 1)", momentum)
			}
			in, err := otReadInputs(args)
			if err != nil {
				return err
			}
			if weights != "" {
				if in.weights, err = otParseFloats(weights); err != nil {
					return fmt.Errorf("--weights: %w", err)
				}
				if len(in.weights) != len(in.measures) {
					return fmt.Errorf("--weights: %d values for %d measures", len(in.weights), len(in.measures))
				}
			}
			if in.weights != nil {
				// Normalised here, so the output echoes the weights actually used.
				src := "--weights"
				if weights == "" {
					src = "the bundle's weights"
				}
				if in.weights, err = normalizeWeights(in.weights); err != nil {
					return fmt.Errorf("%s: %w", src, err)
				}
			}
			l, err := lf.lattice(in.shape, in.shapeSrc, len(in.measures[0]), in.names[0])
			if err != nil {
				return err
			}
			if !(eps > 0) {
				return fmt.Errorf("--eps: %g is not positive", eps)
			}
			opt := ot.BarycenterOptions{Eps: eps, AbsoluteEps: absEps, Method: m, MaxIter: iters, Tol: tol,
				InnerIter: inner, Momentum: momentum, StepSize: step, LogDomain: logDom}
			start := time.Now()
			r, err := ot.LatticeBarycenter(l, in.measures, in.weights, opt)
			if errors.Is(err, ot.ErrNonFinite) {
				return fmt.Errorf("%w\n(ε = %g is too small for the scaling domain: add --log, or use --method stabilized)", err, eps)
			}
			if err != nil {
				return err
			}
			abs := eps
			if !absEps {
				abs *= l.CostUnit()
			}
			w := in.weights
			if w == nil {
				w = make([]float64, len(in.measures))
				for i := range w {
					w[i] = 1 / float64(len(w))
				}
			}
			if err := writeJSON(out, barycenterOutput{
				Barycenter: r.Barycenter, Shape: l.Shape(), Method: m.String(), LogDomain: logDom || m == ot.Stabilized, Eps: eps, EpsAbsolute: abs,
				Weights: w, Iterations: r.Iterations, MarginalError: r.MarginalError, Converged: r.Converged,
				Seconds: time.Since(start).Seconds(),
			}); err != nil {
				return err
			}
			if !r.Converged && tol >= 0 {
				return unconverged(cmd, strict, "the barycenter", r.Iterations, r.MarginalError, tol)
			}
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&weights, "weights", "", `comma-separated barycenter weights (default: the bundle's, else uniform)`)
	cmd.Flags().Float64Var(&eps, "eps", ot.DefaultEps, "entropic regularization, in squared-smallest-spacing units (the paper's 0.5)")
	cmd.Flags().BoolVar(&absEps, "abs-eps", false, "take --eps in raw cost units (POT's reg)")
	cmd.Flags().StringVar(&method, "method", "ibp", "ibp | stabilized | debiased | paper")
	cmd.Flags().BoolVar(&logDom, "log", false, "run debiased/paper in the log domain (finite at small ε; ibp --log = stabilized)")
	countVar(cmd.Flags(), &iters, "iters", 0, "iterations", "maximum (outer) iterations (default 1000; 50 for paper)")
	cmd.Flags().Float64Var(&tol, "tol", 1e-9, "stop when the marginal error is below this (negative: run all iterations)")
	countVar(cmd.Flags(), &inner, "inner", 10, "iterations", "paper: Sinkhorn iterations per barycenter step")
	cmd.Flags().Float64Var(&momentum, "momentum", 0, "paper: heavy-ball momentum of the barycenter step (0: none)")
	cmd.Flags().Float64Var(&step, "step", 0.25, "paper: mirror-descent step size (units of 1/ε)")
	cmd.Flags().StringVarP(&out, "out", "o", "-", "output JSON file (- for stdout)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit non-zero (after writing --out) when the solver stops at --iters without reaching --tol; without it, a warning on stderr")
	deprecatedAlias(cmd, "output", "out")
	return cmd
}

func init() {
	rootCmd.AddCommand(newBarycenterCmd())
}

// normalizeWeights returns w scaled to sum 1, refusing negative or
// non-finite entries and an all-zero vector.
func normalizeWeights(w []float64) ([]float64, error) {
	sum := 0.0
	for i, v := range w {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("weight %d is %g; want finite and ≥ 0", i+1, v)
		}
		sum += v
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return nil, fmt.Errorf("the weights sum to %g; want a positive finite sum", sum)
	}
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = v / sum
	}
	return out, nil
}

// truncateQuoted quotes s, cut to 40 bytes.
func truncateQuoted(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "…"
	}
	return strconv.Quote(s)
}

// parseFlatJSONNumbers parses t when it is a flat JSON array of numbers
// (the common measure file), number by number with strconv, at the speed
// of reading it; ok is false for anything else (nested arrays, other
// values, malformed JSON), which the general decoder then reads or names.
func parseFlatJSONNumbers(t []byte) (out []float64, ok bool) {
	i := 1 // t[0] == '['
	skip := func() {
		for i < len(t) && (t[i] == ' ' || t[i] == '\n' || t[i] == '\t' || t[i] == '\r') {
			i++
		}
	}
	skip()
	if i < len(t) && t[i] == ']' {
		return []float64{}, i+1 == len(t)
	}
	out = make([]float64, 0, bytes.Count(t, []byte{','})+1)
	for {
		skip()
		j := i
		for j < len(t) && (t[j] >= '0' && t[j] <= '9' || t[j] == '-' || t[j] == '+' || t[j] == '.' || t[j] == 'e' || t[j] == 'E') {
			j++
		}
		if j == i || t[i] == '+' || t[i] == '.' {
			return nil, false
		}
		v, err := strconv.ParseFloat(unsafe.String(&t[i], j-i), 64) // t outlives the call; the error is dropped
		if err != nil {
			return nil, false
		}
		out = append(out, v)
		i = j
		skip()
		if i >= len(t) {
			return nil, false
		}
		switch t[i] {
		case ',':
			i++
		case ']':
			return out, i+1 == len(t)
		default:
			return nil, false
		}
	}
}
