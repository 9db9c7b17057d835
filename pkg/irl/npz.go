package irl

import (
	"fmt"
	"os"

	"github.com/sbinet/npyio/npz"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// ReadTrajectoriesNPZ reads demonstrations from a NumPy .npz archive holding
// two integer arrays (int64 or int32), "states" of shape N×Ls and "actions"
// of shape N×La, one trajectory per row, each row padded with -1 after the
// trajectory ends (Ls is La or La+1). In Python:
//
//	np.savez("demos.npz", states=S, actions=A)   # S, A padded with -1
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
	r, err := npz.NewReader(f, st.Size())
	if err != nil {
		return nil, &FormatError{File: path, Msg: fmt.Sprintf("not a readable .npz archive: %v", err)}
	}
	defer r.Close()
	bad := func(field, format string, args ...any) error {
		return &FormatError{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	read := func(name string) ([]int64, int, int, error) {
		h := r.Header(name + ".npy")
		if h == nil {
			h = r.Header(name)
		}
		if h == nil {
			return nil, 0, 0, bad(name, "missing array")
		}
		key := name
		if r.Header(name+".npy") != nil {
			key = name + ".npy"
		}
		shape := h.Descr.Shape
		if len(shape) != 2 {
			return nil, 0, 0, bad(name, "has shape %v, want 2 dimensions (trajectories × steps)", shape)
		}
		if h.Descr.Fortran {
			return nil, 0, 0, bad(name, "is stored in Fortran order; save a C-ordered array")
		}
		rows, cols := shape[0], shape[1]
		var data []int64
		switch h.Descr.Type {
		case "<i8", "|i8":
			if err := r.Read(key, &data); err != nil {
				return nil, 0, 0, bad(name, "%v", err)
			}
		case "<i4", "|i4":
			var d32 []int32
			if err := r.Read(key, &d32); err != nil {
				return nil, 0, 0, bad(name, "%v", err)
			}
			data = make([]int64, len(d32))
			for i, v := range d32 {
				data[i] = int64(v)
			}
		default:
			return nil, 0, 0, bad(name, "has dtype %s, want little-endian int64 or int32", h.Descr.Type)
		}
		if len(data) != rows*cols {
			return nil, 0, 0, bad(name, "holds %d values, want %d×%d", len(data), rows, cols)
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
