package sampleirl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/fedirl/fedirl/pkg/envs"
)

// The demonstrations file of the sample-based learner is JSON Lines, one
// episode per line in the simulator's own spaces (Trajectory's fields):
//
//	{"obs": [[o₀…], [o₁…], …, [o_T…]], "actions": [[a₀…], …, [a_{T−1}…]], "terminated": false}
//
// obs holds the T+1 observations of the episode (the reset's, then the one
// each step returned), actions the T actions applied (a Discrete action as
// a one-element array holding its index), terminated whether the last step
// terminated the episode (false or absent: it was truncated or cut). Blank
// lines are skipped; other keys are ignored. `fedirl env episodes
// --demos-out FILE` writes this format from any policy, and in Python
//
//	f.write(json.dumps({"obs": obs.tolist(), "actions": acts.tolist(), "terminated": term}) + "\n")

// FormatError is an error in a demonstrations file: the file, the line
// (from 1; 0 for the whole file) and the field (e.g. "obs[12]"). It wraps
// ErrInput.
type FormatError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error implements error.
func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, " line %d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Unwrap returns ErrInput.
func (e *FormatError) Unwrap() error { return ErrInput }

// rawEpisode is one line of a demonstrations file, with absent fields nil.
type rawEpisode struct {
	Obs        *[][]float64 `json:"obs"`
	Actions    *[][]float64 `json:"actions"`
	Terminated *bool        `json:"terminated"`
}

// ReadTrajectories parses a demonstrations file (JSON Lines, see above)
// from r; name is used in errors. Every episode must have at least one
// step, len(actions)+1 observations, finite values, observations of
// obs.Dim() values and actions of act.Dim() values (a Discrete action an
// integer index below act.N). A zero Space skips its checks, but the
// lengths must still agree throughout the file (those of line 1). Errors
// are *FormatError naming the file, the line and the field.
func ReadTrajectories(r io.Reader, name string, obs, act envs.Space) ([]Trajectory, error) {
	br := bufio.NewReader(r)
	var out []Trajectory
	obsDim, actDim := obs.Dim(), act.Dim()
	obsSet, actSet := obsDim > 0, actDim > 0
	obsFrom, actFrom := "the environment's observation length", "the environment's action length"
	for line := 1; ; line++ {
		data, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading %s line %d: %w", name, line, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			bad := func(field, format string, args ...any) error {
				return &FormatError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
			}
			var raw rawEpisode
			if derr := json.Unmarshal(data, &raw); derr != nil {
				return nil, episodeJSONError(name, line, data, derr)
			}
			switch {
			case raw.Obs == nil:
				return nil, bad("obs", "missing (want one array of numbers per observation)")
			case raw.Actions == nil:
				return nil, bad("actions", "missing (want one array of numbers per step; a Discrete action as [index])")
			case len(*raw.Actions) == 0:
				return nil, bad("actions", "no steps (an episode needs at least one)")
			case len(*raw.Obs) != len(*raw.Actions)+1:
				return nil, bad("obs", "%d observations for %d actions, want actions+1 (the reset's, then one per step)", len(*raw.Obs), len(*raw.Actions))
			}
			tr := Trajectory{Obs: *raw.Obs, Actions: *raw.Actions, Terminated: raw.Terminated != nil && *raw.Terminated}
			if !obsSet {
				obsDim, obsFrom, obsSet = len(tr.Obs[0]), fmt.Sprintf("the length of obs[0] on line %d", line), true
			}
			if !actSet {
				actDim, actFrom, actSet = len(tr.Actions[0]), fmt.Sprintf("the length of actions[0] on line %d", line), true
			}
			for t, o := range tr.Obs {
				if err := checkRow(o, obsDim, obsFrom); err != nil {
					return nil, bad(fmt.Sprintf("obs[%d]", t), "%v", err)
				}
			}
			for t, a := range tr.Actions {
				if err := checkRow(a, actDim, actFrom); err != nil {
					return nil, bad(fmt.Sprintf("actions[%d]", t), "%v", err)
				}
				if act.IsDiscrete() && (a[0] != math.Trunc(a[0]) || a[0] < 0 || a[0] >= float64(act.N)) {
					return nil, bad(fmt.Sprintf("actions[%d]", t), "%v is not an action index of Discrete(%d) (an integer in 0..%d)", a[0], act.N, act.N-1)
				}
			}
			out = append(out, tr)
		}
		if err == io.EOF {
			break
		}
	}
	if len(out) == 0 {
		return nil, &FormatError{File: name, Msg: "no episodes"}
	}
	return out, nil
}

// checkRow reports a row whose length is not dim (from says whose length
// dim is) or that holds a non-finite value.
func checkRow(v []float64, dim int, from string) error {
	if len(v) != dim {
		return fmt.Errorf("%d values, want %d (%s)", len(v), dim, from)
	}
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("entry %d = %v, want a finite number", j, x)
		}
	}
	return nil
}

// episodeJSONError turns a JSON decoding error of one line into a
// FormatError with the column and, where it can tell, the field: NaN and
// infinities (which Python's json.dump writes by default) are named as such.
func episodeJSONError(file string, line int, data []byte, err error) error {
	fe := &FormatError{File: file, Line: line}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off := int(se.Offset) - 1 // the offending byte
		off = min(max(off, 0), len(data))
		fe.Field = fieldBefore(data[:off])
		rest := data[off:]
		if off > 0 && data[off-1] == '-' {
			rest = data[off-1:]
		}
		for _, tok := range []string{"NaN", "Infinity", "-Infinity", "inf", "-inf", "nan"} {
			if bytes.HasPrefix(rest, []byte(tok)) {
				fe.Msg = fmt.Sprintf("%s at column %d is not a JSON number (Python's json.dump writes it by default); want finite numbers", tok, off+1)
				return fe
			}
		}
		fe.Msg = fmt.Sprintf("invalid JSON at column %d: %v", off+1, se)
	case errors.As(err, &te):
		fe.Field = te.Field
		fe.Msg = fmt.Sprintf("cannot use JSON %s as %s: want one array of numbers per observation or action (a Discrete action as [index])", te.Value, te.Type)
		if te.Field == "" {
			fe.Msg = fmt.Sprintf("cannot use JSON %s here: want a JSON object {\"obs\": …, \"actions\": …}", te.Value)
		}
	default:
		fe.Msg = err.Error()
	}
	return fe
}

// fieldBefore returns the last of the keys "obs", "actions" and
// "terminated" that occurs in prefix ("" if none): the field a syntax error
// after prefix is in, for the lines this package writes.
func fieldBefore(prefix []byte) string {
	best, at := "", -1
	for _, k := range []string{"obs", "actions", "terminated"} {
		if i := bytes.LastIndex(prefix, []byte(`"`+k+`"`)); i > at {
			best, at = k, i
		}
	}
	return best
}

// ReadTrajectoriesFile reads a demonstrations file; see ReadTrajectories.
func ReadTrajectoriesFile(path string, obs, act envs.Space) ([]Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening demonstrations: %w", err)
	}
	defer f.Close()
	return ReadTrajectories(f, path, obs, act)
}

// episodeLine is the line WriteTrajectories writes: terminated always present.
type episodeLine struct {
	Obs        [][]float64 `json:"obs"`
	Actions    [][]float64 `json:"actions"`
	Terminated bool        `json:"terminated"`
}

// WriteTrajectories writes demos as a demonstrations file, one episode per
// line; every float64 is written in the shortest form that reads back to
// the same bits.
func WriteTrajectories(w io.Writer, demos []Trajectory) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i, tr := range demos {
		if err := enc.Encode(episodeLine{tr.Obs, tr.Actions, tr.Terminated}); err != nil {
			return fmt.Errorf("sampleirl: writing episode %d: %w", i, err)
		}
	}
	return bw.Flush()
}
