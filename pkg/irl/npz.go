package irl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/npy"
)

// ReadTrajectoriesNPZ reads demonstrations from a NumPy .npz archive holding
// two integer arrays (int64 or int32), "states" of shape N×Ls and "actions"
// of shape N×La, one trajectory per row, each row padded with -1 after the
// trajectory ends (Ls is La or La+1). In Python:
//
//	np.savez("demos.npz", states=S, actions=A)   # S, A padded with -1
//
// An archive without "states" but with imitation's trajectory fields "obs",
// "acts" and "indices" (imitation.data.serialize of a Discrete observation
// space) is read as such: obs holds the T_i+1 state indices of every episode
// concatenated, acts the T_i actions, and indices the split points of acts
// (obs splits at indices[i]+i+1); other fields (rews, terminal, infos) are
// ignored.
//
// If m is not nil the trajectories are checked against it. Errors are
// *FormatError naming the file and the array entry (e.g. "actions[4][7]").
func ReadTrajectoriesNPZ(path string, m *mdp.MDP) ([]Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening demonstrations: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening demonstrations: %w", err)
	}
	return DecodeTrajectoriesNPZ(f, st.Size(), path, m)
}

// DecodeTrajectoriesNPZ reads an .npz archive of size bytes from r; path is
// used in errors. See ReadTrajectoriesNPZ for the layouts.
func DecodeTrajectoriesNPZ(r io.ReaderAt, size int64, path string, m *mdp.MDP) ([]Trajectory, error) {
	ar, err := npy.OpenArchive(r, size)
	if err != nil {
		return nil, &FormatError{File: path, Msg: err.Error()}
	}
	bad := func(field, format string, args ...any) error {
		return &FormatError{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if !ar.Has("states") && ar.Has("obs") && ar.Has("acts") && ar.Has("indices") {
		return decodeImitation(ar, path, m)
	}
	read := func(name string) ([]int64, int, int, error) {
		data, rows, cols, err := readNPYInts(ar, name)
		if err != nil {
			return nil, 0, 0, bad(name, "%v", err)
		}
		return data, rows, cols, nil
	}
	states, ns, ls, err := read("states")
	if err != nil {
		return nil, err
	}
	actions, na, la, err := read("actions")
	if err != nil {
		return nil, err
	}
	if ns != na {
		return nil, bad("states", "has %d rows but actions has %d", ns, na)
	}
	if ns == 0 {
		return nil, &FormatError{File: path, Msg: "no trajectories"}
	}
	// unpad returns the prefix of row before the first -1, checking that only -1 follows.
	unpad := func(name string, i int, row []int64) ([]int, error) {
		n := len(row)
		for j, v := range row {
			if v == -1 {
				n = j
				break
			}
		}
		out := make([]int, n)
		for j, v := range row {
			switch {
			case j < n && v < 0:
				return nil, bad(fmt.Sprintf("%s[%d][%d]", name, i, j), "negative index %d", v)
			case j < n:
				out[j] = int(v)
			case v != -1:
				return nil, bad(fmt.Sprintf("%s[%d][%d]", name, i, j), "value %d after the -1 padding", v)
			}
		}
		return out, nil
	}
	S, A := 0, 0
	if m != nil {
		S, A = m.NumStates, m.NumActions
	}
	demos := make([]Trajectory, ns)
	for i := range demos {
		s, err := unpad("states", i, states[i*ls:(i+1)*ls])
		if err != nil {
			return nil, err
		}
		a, err := unpad("actions", i, actions[i*la:(i+1)*la])
		if err != nil {
			return nil, err
		}
		demos[i] = Trajectory{States: s, Actions: a}
		if err := checkTrajectory(S, A, m, demos[i]); err != nil {
			fe := err.(*FormatError)
			fe.File, fe.Field = path, fmt.Sprintf("row %d: %s", i, fe.Field)
			return nil, fe
		}
	}
	return demos, nil
}

// readNPYInts decodes a 2-D little-endian int64 or int32 array (package npy).
func readNPYInts(ar *npy.Archive, name string) (data []int64, rows, cols int, err error) {
	a, err := ar.Array(name)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(a.Shape) != 2 {
		return nil, 0, 0, fmt.Errorf("has shape %v, want 2 dimensions (trajectories × steps)", a.Shape)
	}
	if !a.IsInt() {
		return nil, 0, 0, fmt.Errorf("has dtype %s, want little-endian int64 or int32", a.Dtype)
	}
	return a.Ints, a.Shape[0], a.Shape[1], nil
}

// decodeImitation reads imitation's concatenated layout; see ReadTrajectoriesNPZ.
func decodeImitation(ar *npy.Archive, path string, m *mdp.MDP) ([]Trajectory, error) {
	bad := func(field, format string, args ...any) error {
		return &FormatError{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	vec := func(name string) ([]int64, error) {
		a, err := ar.Array(name)
		if err != nil {
			return nil, bad(name, "%v", err)
		}
		if !a.IsInt() {
			return nil, bad(name, "has dtype %s, want integer indices (snap continuous observations to the lattice first)", a.Dtype)
		}
		if len(a.Shape) > 2 || (len(a.Shape) == 2 && a.Shape[1] != 1) || len(a.Shape) == 0 {
			return nil, bad(name, "has shape %v, want (N,) or (N, 1)", a.Shape)
		}
		return a.Ints, nil
	}
	obs, err := vec("obs")
	if err != nil {
		return nil, err
	}
	acts, err := vec("acts")
	if err != nil {
		return nil, err
	}
	idx, err := vec("indices")
	if err != nil {
		return nil, err
	}
	n := len(idx) + 1
	if len(obs) != len(acts)+n {
		return nil, bad("obs", "has %d entries, want len(acts)+episodes = %d+%d", len(obs), len(acts), n)
	}
	S, A := 0, 0
	if m != nil {
		S, A = m.NumStates, m.NumActions
	}
	demos := make([]Trajectory, n)
	prev := int64(0)
	for i := range demos {
		end := int64(len(acts))
		if i < len(idx) {
			end = idx[i]
		}
		if end < prev || end > int64(len(acts)) {
			return nil, bad(fmt.Sprintf("indices[%d]", i), "split point %d outside [%d, %d]", end, prev, len(acts))
		}
		tr := Trajectory{States: make([]int, end-prev+1), Actions: make([]int, end-prev)}
		for t := range tr.Actions {
			tr.Actions[t] = int(acts[prev+int64(t)])
		}
		o := prev + int64(i)
		for t := range tr.States {
			tr.States[t] = int(obs[o+int64(t)])
		}
		if err := checkTrajectory(S, A, m, tr); err != nil {
			fe := err.(*FormatError)
			fe.File, fe.Field = path, fmt.Sprintf("episode %d: %s", i, fe.Field)
			return nil, fe
		}
		demos[i] = tr
		prev = end
	}
	return demos, nil
}

// LoadSpecNPZ reads an MDP with its features from a NumPy .npz archive of
// sparse transitions, the binary twin of the JSON spec (see the package
// comment) for models too large for JSON:
//
//	np.savez("mdp.npz", num_states=S, num_actions=A, gamma=0.99,
//	         row_ptr=row_ptr, next=next, prob=prob,   # CSR, row k = s*A + a
//	         features=phi,                             # (S*A) × d float64
//	         terminal=[S-1], init=init, horizon=0)     # optional
//
// Integer arrays are int64 or int32, real ones float64. Errors are
// *FormatError naming the file and the array (e.g. "next[12]").
func LoadSpecNPZ(path string) (*mdp.MDP, *mat.Dense, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening MDP: %w", err)
	}
	return DecodeSpecNPZ(bytes.NewReader(raw), int64(len(raw)), path)
}

// DecodeSpecNPZ reads an .npz MDP of size bytes from r; path is used in
// errors. See LoadSpecNPZ for the layout.
func DecodeSpecNPZ(r io.ReaderAt, size int64, path string) (*mdp.MDP, *mat.Dense, error) {
	ar, err := npy.OpenArchive(r, size)
	if err != nil {
		return nil, nil, &FormatError{File: path, Msg: err.Error()}
	}
	bad := func(field, format string, args ...any) error {
		return &FormatError{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	get := func(name string, optional bool) (*npy.Array, error) {
		if optional && !ar.Has(name) {
			return nil, nil
		}
		a, err := ar.Array(name)
		if err != nil {
			return nil, bad(name, "%v", err)
		}
		return a, nil
	}
	ints := func(name string, optional bool) ([]int, error) {
		a, err := get(name, optional)
		if a == nil || err != nil {
			return nil, err
		}
		if !a.IsInt() {
			return nil, bad(name, "has dtype %s, want int64 or int32", a.Dtype)
		}
		if len(a.Shape) > 1 {
			return nil, bad(name, "has shape %v, want a scalar or a vector", a.Shape)
		}
		out := make([]int, len(a.Ints))
		for i, v := range a.Ints {
			if v != int64(int(v)) {
				return nil, bad(fmt.Sprintf("%s[%d]", name, i), "%d does not fit an int", v)
			}
			out[i] = int(v)
		}
		return out, nil
	}
	floats := func(name string, optional bool, dims int) ([]float64, []int, error) {
		a, err := get(name, optional)
		if a == nil || err != nil {
			return nil, nil, err
		}
		if a.Dtype != npy.Float64 {
			return nil, nil, bad(name, "has dtype %s, want float64", a.Dtype)
		}
		if len(a.Shape) > dims {
			return nil, nil, bad(name, "has shape %v, want at most %d dimensions", a.Shape, dims)
		}
		return a.Floats, a.Shape, nil
	}
	scalarInt := func(name string, optional bool) (int, error) {
		v, err := ints(name, optional)
		if err != nil || v == nil {
			return 0, err
		}
		if len(v) != 1 {
			return 0, bad(name, "has %d entries, want one number", len(v))
		}
		return v[0], nil
	}
	var s Spec
	var c CSR
	if s.States, err = scalarInt("num_states", false); err != nil {
		return nil, nil, err
	}
	if s.Actions, err = scalarInt("num_actions", false); err != nil {
		return nil, nil, err
	}
	if s.Horizon, err = scalarInt("horizon", true); err != nil {
		return nil, nil, err
	}
	g, _, err := floats("gamma", false, 1)
	if err != nil {
		return nil, nil, err
	}
	if len(g) != 1 {
		return nil, nil, bad("gamma", "has %d entries, want one number", len(g))
	}
	s.Gamma = &g[0]
	if s.Init, _, err = floats("init", true, 1); err != nil {
		return nil, nil, err
	}
	if s.Terminal, err = ints("terminal", true); err != nil {
		return nil, nil, err
	}
	if c.RowPtr, err = ints("row_ptr", false); err != nil {
		return nil, nil, err
	}
	if c.Next, err = ints("next", false); err != nil {
		return nil, nil, err
	}
	if c.Prob, _, err = floats("prob", false, 1); err != nil {
		return nil, nil, err
	}
	phi, shape, err := floats("features", false, 2)
	if err != nil {
		return nil, nil, err
	}
	if len(shape) != 2 || shape[1] == 0 {
		return nil, nil, bad("features", "has shape %v, want (num_states*num_actions, d) with d ≥ 1", shape)
	}
	s.CSR = &c
	s.Features = make([][]float64, shape[0])
	for k := range s.Features {
		s.Features[k] = phi[k*shape[1] : (k+1)*shape[1] : (k+1)*shape[1]]
	}
	m, f, err := s.Build(path)
	if fe, ok := err.(*FormatError); ok {
		// Name the archive's arrays, not the JSON spec's keys.
		fe.Field = strings.TrimPrefix(fe.Field, "csr.")
		for _, k := range []string{"states", "actions"} {
			if fe.Field == k {
				fe.Field = "num_" + k
			}
		}
	}
	return m, f, err
}

// LoadMDP reads an MDP with its features: an .npz archive (LoadSpecNPZ) when
// path ends in .npz, a JSON spec (LoadSpec) otherwise.
func LoadMDP(path string) (*mdp.MDP, *mat.Dense, error) {
	if strings.HasSuffix(strings.ToLower(path), ".npz") {
		return LoadSpecNPZ(path)
	}
	return LoadSpec(path)
}

// ReadTrajectoriesAny reads demonstrations: an .npz archive
// (ReadTrajectoriesNPZ) when path ends in .npz, JSON Lines otherwise.
func ReadTrajectoriesAny(path string, m *mdp.MDP) ([]Trajectory, error) {
	if strings.HasSuffix(strings.ToLower(path), ".npz") {
		return ReadTrajectoriesNPZ(path, m)
	}
	return ReadTrajectoriesFile(path, m)
}
