package irl

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

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
	return DecodeTrajectoriesNPZ(f, st.Size(), path, m)
}

// DecodeTrajectoriesNPZ reads an .npz archive of size bytes from r; path is
// used in errors. See ReadTrajectoriesNPZ for the layout.
func DecodeTrajectoriesNPZ(r io.ReaderAt, size int64, path string, m *mdp.MDP) ([]Trajectory, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, &FormatError{File: path, Msg: fmt.Sprintf("not a readable .npz archive: %v", err)}
	}
	bad := func(field, format string, args ...any) error {
		return &FormatError{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	read := func(name string) ([]int64, int, int, error) {
		var zf *zip.File
		for _, f := range zr.File {
			if f.Name == name+".npy" || f.Name == name {
				zf = f
				break
			}
		}
		if zf == nil {
			return nil, 0, 0, bad(name, "missing array")
		}
		data, rows, cols, err := readNPYInts(zf)
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

// maxNPYBytes bounds the size of one array so a corrupt archive cannot request huge allocations.
const maxNPYBytes = 1 << 31

var (
	npyDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// readNPYInts decodes a 2-D little-endian int64 or int32 .npy array from a
// zip entry. It is hand-written rather than using github.com/sbinet/npyio
// because its v0.6.0 header parser panics on corrupt input (a header without
// a newline gives "slice bounds out of range [:-1]") and its element loop
// ignores io.EOF, while user files must only ever produce errors.
func readNPYInts(zf *zip.File) (data []int64, rows, cols int, err error) {
	if zf.UncompressedSize64 > maxNPYBytes {
		return nil, 0, 0, fmt.Errorf("array of %d bytes is too large", zf.UncompressedSize64)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("cannot open: %v", err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, maxNPYBytes+1))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("cannot read: %v", err)
	}
	if len(raw) < 10 || string(raw[:6]) != "\x93NUMPY" {
		return nil, 0, 0, errors.New("not a .npy array (bad magic)")
	}
	var hl, off int
	switch raw[6] {
	case 1:
		hl, off = int(binary.LittleEndian.Uint16(raw[8:10])), 10
	case 2, 3:
		if len(raw) < 12 {
			return nil, 0, 0, errors.New("truncated .npy header")
		}
		hl, off = int(binary.LittleEndian.Uint32(raw[8:12])), 12
	default:
		return nil, 0, 0, fmt.Errorf("unsupported .npy version %d", raw[6])
	}
	if hl > len(raw)-off {
		return nil, 0, 0, errors.New("truncated .npy header")
	}
	hdr, body := string(raw[off:off+hl]), raw[off+hl:]
	d, f, sh := npyDescr.FindStringSubmatch(hdr), npyFortran.FindStringSubmatch(hdr), npyShape.FindStringSubmatch(hdr)
	if d == nil || f == nil || sh == nil {
		return nil, 0, 0, fmt.Errorf("malformed .npy header %q", hdr)
	}
	if f[1] == "True" {
		return nil, 0, 0, errors.New("is stored in Fortran order; save a C-ordered array")
	}
	var shape []int
	for _, tok := range strings.Split(sh[1], ",") {
		if tok = strings.TrimSpace(tok); tok == "" {
			continue
		}
		v, err := strconv.Atoi(tok)
		if err != nil || v < 0 {
			return nil, 0, 0, fmt.Errorf("bad shape entry %q", tok)
		}
		shape = append(shape, v)
	}
	if len(shape) != 2 {
		return nil, 0, 0, fmt.Errorf("has shape %v, want 2 dimensions (trajectories × steps)", shape)
	}
	rows, cols = shape[0], shape[1]
	size := 0
	switch d[1] {
	case "<i8":
		size = 8
	case "<i4":
		size = 4
	default:
		return nil, 0, 0, fmt.Errorf("has dtype %s, want little-endian int64 or int32", d[1])
	}
	if cols > 0 && rows > len(body)/size/cols || rows*cols*size != len(body) {
		return nil, 0, 0, fmt.Errorf("holds %d data bytes, want %d×%d values of %d bytes", len(body), rows, cols, size)
	}
	data = make([]int64, rows*cols)
	for i := range data {
		if size == 8 {
			data[i] = int64(binary.LittleEndian.Uint64(body[8*i:]))
		} else {
			data[i] = int64(int32(binary.LittleEndian.Uint32(body[4*i:])))
		}
	}
	return data, rows, cols, nil
}
