package irl

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

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// FormatError describes malformed input: the file, the line (0 if not
// known), the field (e.g. "states[3]" or "transitions[17][3]") and what is wrong.
type FormatError struct {
	// File is the input's name.
	File string
	// Line is the 1-based line, 0 when not known.
	Line int
	// Field names the offending key or array entry, "" when not specific.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error formats the error as "file:line: field F: msg", omitting unknown parts.
func (e *FormatError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// jsonError converts a decoding error of data into a FormatError for file,
// with line numbers counted from firstLine.
func jsonError(file string, firstLine int, data []byte, err error) error {
	fe := &FormatError{File: file, Line: firstLine}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.Offset-1) // Offset counts the offending byte
		fe.Line = firstLine + line - 1
		fe.Msg = fmt.Sprintf("invalid JSON at column %d: %v", col, se)
	case errors.As(err, &te):
		line, _ := position(data, te.Offset)
		fe.Line = firstLine + line - 1
		fe.Field = te.Field
		if fe.Field == "" {
			fe.Msg = fmt.Sprintf("cannot use JSON %s here: want a JSON object", te.Value)
		} else {
			fe.Msg = fmt.Sprintf("cannot use JSON %s as %s", te.Value, te.Type)
		}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		line, _ := position(data, int64(len(data)))
		fe.Line = firstLine + line - 1
		fe.Msg = "unexpected end of JSON input"
	default:
		fe.Msg = err.Error()
	}
	return fe
}

// position returns the 1-based line and column of byte offset off in data.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

type rawTrajectory struct {
	States  *[]int `json:"states"`
	Actions *[]int `json:"actions"`
}

// ReadTrajectories parses JSON Lines demonstrations (see the package comment)
// from r; name is used in error messages. If m is not nil, every trajectory
// is also checked against it (index ranges, actions in terminal states,
// horizon). Errors are *FormatError naming name, the line and the field.
func ReadTrajectories(r io.Reader, name string, m *mdp.MDP) ([]Trajectory, error) {
	br := bufio.NewReader(r)
	var out []Trajectory
	S, A := 0, 0
	if m != nil {
		S, A = m.NumStates, m.NumActions
	}
	for line := 1; ; line++ {
		data, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading %s line %d: %w", name, line, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			var raw rawTrajectory
			if derr := json.Unmarshal(data, &raw); derr != nil {
				return nil, jsonError(name, line, data, derr)
			}
			if raw.States == nil {
				return nil, &FormatError{File: name, Line: line, Field: "states", Msg: "missing"}
			}
			if raw.Actions == nil {
				return nil, &FormatError{File: name, Line: line, Field: "actions", Msg: "missing"}
			}
			tr := Trajectory{States: *raw.States, Actions: *raw.Actions}
			if cerr := checkTrajectory(S, A, m, tr); cerr != nil {
				fe := cerr.(*FormatError)
				fe.File, fe.Line = name, line
				return nil, fe
			}
			out = append(out, tr)
		}
		if err == io.EOF {
			break
		}
	}
	if len(out) == 0 {
		return nil, &FormatError{File: name, Msg: "no trajectories"}
	}
	return out, nil
}

// ReadTrajectoriesFile reads a JSON Lines demonstration file; see ReadTrajectories.
func ReadTrajectoriesFile(path string, m *mdp.MDP) ([]Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening demonstrations: %w", err)
	}
	defer f.Close()
	return ReadTrajectories(f, path, m)
}

// WriteTrajectories writes demos as JSON Lines, one {"states":…,"actions":…} object per line.
func WriteTrajectories(w io.Writer, demos []Trajectory) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i, tr := range demos {
		if err := enc.Encode(tr); err != nil {
			return fmt.Errorf("irl: writing trajectory %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// WriteTrajectoriesFile writes demos to path as JSON Lines.
func WriteTrajectoriesFile(path string, demos []Trajectory) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating demonstrations: %w", err)
	}
	if err := WriteTrajectories(f, demos); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// Spec is the JSON description of an MDP with its features; see the package
// comment for the layout. Use NewSpec to make one from Go values.
type Spec struct {
	// States and Actions are S and A.
	States  int `json:"states"`
	Actions int `json:"actions"`
	// Gamma is the discount γ (required; a pointer so that a missing key is an error).
	Gamma *float64 `json:"gamma"`
	// Horizon is the episode cap (0 = infinite).
	Horizon int `json:"horizon,omitempty"`
	// Init is the initial distribution; empty means uniform over non-terminal states.
	Init []float64 `json:"init,omitempty"`
	// Terminal lists terminal states.
	Terminal []int `json:"terminal,omitempty"`
	// Transitions lists [s, a, s2, p] rows; alternatively give CSR.
	Transitions [][]float64 `json:"transitions,omitempty"`
	// CSR is the compressed-sparse-row alternative to Transitions.
	CSR *CSR `json:"csr,omitempty"`
	// Features has states*actions rows of d numbers (row s*actions+a).
	Features [][]float64 `json:"features"`
}

// CSR is the compressed-sparse-row form of the transitions (as in mdp.MDP).
type CSR struct {
	// RowPtr has states*actions+1 entries; row k = s*actions+a spans [RowPtr[k], RowPtr[k+1]).
	RowPtr []int `json:"row_ptr"`
	// Next holds the successor states of all rows.
	Next []int `json:"next"`
	// Prob holds the matching probabilities.
	Prob []float64 `json:"prob"`
}

// maxPairs bounds states*actions so a malformed spec cannot request huge allocations.
const maxPairs = 1 << 28

// ReadSpec parses a JSON spec from r (name is used in errors) without
// building it; unknown keys are errors.
func ReadSpec(r io.Reader, name string) (*Spec, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
			key := strings.TrimPrefix(msg, "json: unknown field ")
			line := 0
			if i := bytes.Index(data, []byte(key)); i >= 0 {
				line, _ = position(data, int64(i))
			}
			return nil, &FormatError{File: name, Line: line, Field: strings.Trim(key, `"`), Msg: "unknown key"}
		}
		return nil, jsonError(name, 1, data, err)
	}
	if dec.More() {
		line, _ := position(data, dec.InputOffset())
		return nil, &FormatError{File: name, Line: line, Msg: "unexpected data after the JSON object"}
	}
	return &s, nil
}

// LoadSpec reads the spec file at path and builds its MDP and feature matrix.
func LoadSpec(path string) (*mdp.MDP, *mat.Dense, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening spec: %w", err)
	}
	defer f.Close()
	s, err := ReadSpec(f, path)
	if err != nil {
		return nil, nil, err
	}
	return s.Build(path)
}

// Build checks the spec and returns its MDP and (S*A)×d feature matrix;
// errors are *FormatError naming file and field.
func (s *Spec) Build(file string) (*mdp.MDP, *mat.Dense, error) {
	bad := func(field, format string, args ...any) error {
		return &FormatError{File: file, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	S, A := s.States, s.Actions
	switch {
	case S <= 0:
		return nil, nil, bad("states", "must be positive, got %d", S)
	case A <= 0:
		return nil, nil, bad("actions", "must be positive, got %d", A)
	case S > maxPairs/A:
		return nil, nil, bad("states", "states*actions = %d*%d is too large", S, A)
	case s.Gamma == nil:
		return nil, nil, bad("gamma", "missing")
	case !(*s.Gamma >= 0 && *s.Gamma <= 1):
		return nil, nil, bad("gamma", "%v not in [0,1]", *s.Gamma)
	case s.Horizon < 0:
		return nil, nil, bad("horizon", "%d is negative", s.Horizon)
	case *s.Gamma == 1 && s.Horizon == 0:
		return nil, nil, bad("gamma", "1 needs a finite horizon")
	}
	// Features first: their length bounds the allocations below by the input size.
	if len(s.Features) != S*A {
		return nil, nil, bad("features", "has %d rows, want states*actions = %d", len(s.Features), S*A)
	}
	d := len(s.Features[0])
	if d == 0 {
		return nil, nil, bad("features[0]", "empty row")
	}
	phi := mat.NewDense(S*A, d, nil)
	for k, row := range s.Features {
		if len(row) != d {
			return nil, nil, bad(fmt.Sprintf("features[%d]", k), "has %d entries, want %d (as row 0)", len(row), d)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, bad(fmt.Sprintf("features[%d][%d]", k, j), "not finite")
			}
		}
		phi.SetRow(k, row)
	}
	terminal := make([]bool, S)
	for i, t := range s.Terminal {
		if t < 0 || t >= S {
			return nil, nil, bad(fmt.Sprintf("terminal[%d]", i), "state %d out of range [0,%d)", t, S)
		}
		terminal[t] = true
	}
	if s.Init != nil && len(s.Init) != S {
		return nil, nil, bad("init", "has %d entries, want %d states", len(s.Init), S)
	}
	var m *mdp.MDP
	switch {
	case s.Transitions != nil && s.CSR != nil:
		return nil, nil, bad("transitions", "give either transitions or csr, not both")
	case s.Transitions != nil:
		b := mdp.NewBuilder(S, A)
		b.Gamma, b.Horizon, b.Terminal = *s.Gamma, s.Horizon, terminal
		if len(s.Init) > 0 {
			b.Init = s.Init
		}
		for i, row := range s.Transitions {
			if len(row) != 4 {
				return nil, nil, bad(fmt.Sprintf("transitions[%d]", i), "has %d entries, want [s, a, s2, p]", len(row))
			}
			idx := [3]int{}
			for j, lim := range [3]int{S, A, S} {
				v := row[j]
				if v != math.Trunc(v) || v < 0 || v >= float64(lim) {
					return nil, nil, bad(fmt.Sprintf("transitions[%d][%d]", i, j), "%v is not an index in [0,%d)", v, lim)
				}
				idx[j] = int(v)
			}
			if p := row[3]; !(p >= 0 && p <= 1) {
				return nil, nil, bad(fmt.Sprintf("transitions[%d][3]", i), "probability %v not in [0,1]", p)
			}
			b.AddTransition(idx[0], idx[1], idx[2], row[3])
		}
		var err error
		if m, err = b.Build(); err != nil {
			return nil, nil, bad("transitions", "%v", err)
		}
	case s.CSR != nil:
		c := s.CSR
		if len(c.RowPtr) != S*A+1 {
			return nil, nil, bad("csr.row_ptr", "has %d entries, want states*actions+1 = %d", len(c.RowPtr), S*A+1)
		}
		if len(c.Next) != len(c.Prob) {
			return nil, nil, bad("csr.next", "has %d entries but csr.prob has %d", len(c.Next), len(c.Prob))
		}
		m = &mdp.MDP{NumStates: S, NumActions: A, Gamma: *s.Gamma, Horizon: s.Horizon, Terminal: terminal,
			RowPtr: c.RowPtr, Next: make([]int32, len(c.Next)), Prob: c.Prob}
		for i, n := range c.Next {
			if n < 0 || n >= S {
				return nil, nil, bad(fmt.Sprintf("csr.next[%d]", i), "state %d out of range [0,%d)", n, S)
			}
			m.Next[i] = int32(n)
		}
		m.Init = s.Init
		if len(m.Init) == 0 {
			m.Init = uniformInit(terminal)
			if m.Init == nil {
				return nil, nil, bad("terminal", "every state is terminal")
			}
		}
		if err := m.Validate(); err != nil {
			return nil, nil, bad("csr", "%v", err)
		}
	default:
		return nil, nil, bad("transitions", "missing (give transitions or csr)")
	}
	if err := m.Validate(); err != nil {
		return nil, nil, bad("init", "%v", err)
	}
	return m, phi, nil
}

func uniformInit(terminal []bool) []float64 {
	n := 0
	for _, t := range terminal {
		if !t {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	init := make([]float64, len(terminal))
	for s, t := range terminal {
		if !t {
			init[s] = 1 / float64(n)
		}
	}
	return init
}

// NewSpec describes m and phi as a Spec with a transitions list (terminal
// rows omitted).
func NewSpec(m *mdp.MDP, phi *mat.Dense) *Spec {
	g := m.Gamma
	s := &Spec{States: m.NumStates, Actions: m.NumActions, Gamma: &g, Horizon: m.Horizon,
		Init: append([]float64(nil), m.Init...)}
	for st := 0; st < m.NumStates; st++ {
		if m.IsTerminal(st) {
			s.Terminal = append(s.Terminal, st)
			continue
		}
		for a := 0; a < m.NumActions; a++ {
			next, prob := m.Successors(st, a)
			for i, n := range next {
				s.Transitions = append(s.Transitions, []float64{float64(st), float64(a), float64(n), prob[i]})
			}
		}
	}
	r, _ := phi.Dims()
	s.Features = make([][]float64, r)
	for k := range s.Features {
		s.Features[k] = mat.Row(nil, k, phi)
	}
	return s
}

// WriteSpec writes m and phi as a JSON spec readable by ReadSpec (and by Python's json).
func WriteSpec(w io.Writer, m *mdp.MDP, phi *mat.Dense) error {
	if err := json.NewEncoder(w).Encode(NewSpec(m, phi)); err != nil {
		return fmt.Errorf("irl: writing spec: %w", err)
	}
	return nil
}

// WriteSpecFile writes m and phi as a JSON spec to path.
func WriteSpecFile(path string, m *mdp.MDP, phi *mat.Dense) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating spec: %w", err)
	}
	if err := WriteSpec(f, m, phi); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
