// Package report is the layer the studies under pkg/experiments share to turn
// numbers into results a reader can trust: summary statistics (mean ± sample
// standard deviation) and paired differences with Student-t confidence
// intervals, and run-folder files written atomically (JSON, CSV, Markdown,
// PNG), so a killed run never leaves half a file behind.
//
// It computes no study and draws no plot of its own; statistics come from
// gonum's stat and distuv packages.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary is the mean ± sample standard deviation of N values.
type Summary struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	N    int     `json:"n"`
}

// Summarize returns the mean and sample standard deviation of xs (Std 0 for
// fewer than two values; the zero Summary for none).
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := Summary{Mean: stat.Mean(xs, nil), N: len(xs)}
	if len(xs) > 1 {
		s.Std = stat.StdDev(xs, nil)
	}
	return s
}

// Paired is the paired comparison of two methods over the same draws
// (seeds): the per-draw differences a_i − b_i, their mean, standard error and
// two-sided Student-t confidence interval.
type Paired struct {
	// Diffs are a_i − b_i in draw order.
	Diffs []float64 `json:"diffs"`
	// Mean is the mean difference; StdErr its standard error s/√n.
	Mean   float64 `json:"mean"`
	StdErr float64 `json:"stderr"`
	// Level is the confidence level of [Lo, Hi], e.g. 0.95.
	Level float64 `json:"level"`
	// Lo and Hi bound the interval Mean ± t_{n−1,(1+Level)/2} · StdErr; both
	// are NaN (null in JSON) with fewer than two draws.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	N  int     `json:"n"`
}

// PairedDiff compares a and b draw by draw at the given confidence level
// (0 means 0.95). It errors if the lengths differ, a value is not finite or
// the level is outside (0, 1).
func PairedDiff(a, b []float64, level float64) (Paired, error) {
	if level == 0 {
		level = 0.95
	}
	if !(level > 0 && level < 1) {
		return Paired{}, fmt.Errorf("report: confidence level %v outside (0, 1)", level)
	}
	if len(a) != len(b) {
		return Paired{}, fmt.Errorf("report: paired comparison of %d and %d draws", len(a), len(b))
	}
	p := Paired{Diffs: make([]float64, len(a)), Level: level, N: len(a), Lo: math.NaN(), Hi: math.NaN()}
	for i := range a {
		d := a[i] - b[i]
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return Paired{}, fmt.Errorf("report: draw %d: difference %v − %v is not finite", i, a[i], b[i])
		}
		p.Diffs[i] = d
	}
	if p.N == 0 {
		return p, nil
	}
	p.Mean = stat.Mean(p.Diffs, nil)
	if p.N < 2 {
		return p, nil
	}
	p.StdErr = stat.StdDev(p.Diffs, nil) / math.Sqrt(float64(p.N))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(p.N - 1)}.Quantile((1 + level) / 2)
	p.Lo, p.Hi = p.Mean-t*p.StdErr, p.Mean+t*p.StdErr
	return p, nil
}

// AtLevel returns the interval of the same per-draw differences at another
// confidence level (a Bonferroni-corrected one, or a level lost in JSON).
func (p Paired) AtLevel(level float64) (Paired, error) {
	return PairedDiff(p.Diffs, make([]float64, len(p.Diffs)), level)
}

// Excludes0 reports whether the interval lies entirely on one side of 0, i.e.
// the difference is significant at the interval's level.
func (p Paired) Excludes0() bool { return p.Lo > 0 || p.Hi < 0 }

// MarshalJSON writes NaN bounds as null.
func (p Paired) MarshalJSON() ([]byte, error) {
	type plain Paired
	var lo, hi *float64
	if !math.IsNaN(p.Lo) {
		lo = &p.Lo
	}
	if !math.IsNaN(p.Hi) {
		hi = &p.Hi
	}
	return json.Marshal(struct {
		plain
		Lo *float64 `json:"lo"`
		Hi *float64 `json:"hi"`
	}{plain(p), lo, hi})
}

// WriteFile writes data to path atomically: to a temporary file in the same
// folder, synced, then renamed over path, creating the folder if needed.
// Folders are created 0755 and the file 0644, both under the user's umask,
// as os.Create and os.MkdirAll would (os.CreateTemp's 0600 would hide the
// outputs from collaborators on a shared machine).
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// tempSeq makes temporary names unique within the process; O_EXCL makes
// them unique across processes.
var tempSeq atomic.Uint64

// createTemp creates a new file dir/prefix<n> with mode 0644 under the umask
// (os.CreateTemp always uses 0600).
func createTemp(dir, prefix string) (*os.File, error) {
	pid := uint64(os.Getpid())
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(pid, 36)+"-"+strconv.FormatUint(tempSeq.Add(1), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free temporary name %s* in %s", prefix, dir)
}

// JSON returns v as indented JSON with a final newline.
func JSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteJSON writes v as indented JSON to path, atomically.
func WriteJSON(path string, v any) error {
	b, err := JSON(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return WriteFile(path, b)
}
