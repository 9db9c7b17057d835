// Package npy decodes NumPy .npy arrays and .npz archives of them: the
// little-endian float64, float32, int64 and int32 arrays in C order that
// Python users write with numpy.save and numpy.savez.
//
// It is hand-written rather than using github.com/sbinet/npyio because that
// library's v0.6.0 header parser panics on corrupt input (a header without a
// newline gives "slice bounds out of range [:-1]") and its element loop
// ignores io.EOF, while user files must only ever produce errors. Every size
// is bounded (MaxBytes) before anything is allocated. It imports nothing of
// the project and knows nothing of what the arrays mean.
package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// MaxBytes bounds the size of one array so a corrupt or hostile file cannot
// request huge allocations.
const MaxBytes = 1 << 31

// Dtype names accepted by Decode (NumPy's descr strings).
const (
	Float64 = "<f8"
	Float32 = "<f4"
	Int64   = "<i8"
	Int32   = "<i4"
)

// Array is a decoded array: its shape and its values in C order, as float64
// (dtypes <f8 and <f4, converted exactly) or int64 (dtypes <i8 and <i4); the
// other slice is nil.
type Array struct {
	// Dtype is the NumPy descr of the stored array ("<f8", "<f4", "<i8" or "<i4").
	Dtype string
	// Shape is the array's shape (empty for a 0-d scalar).
	Shape []int
	// Floats holds the values of a float64 or float32 array.
	Floats []float64
	// Ints holds the values of an int64 or int32 array.
	Ints []int64
}

// Len returns the number of elements, the product of Shape.
func (a *Array) Len() int {
	n := 1
	for _, s := range a.Shape {
		n *= s
	}
	return n
}

// IsInt reports whether the array holds integers.
func (a *Array) IsInt() bool { return a.Dtype == Int64 || a.Dtype == Int32 }

// Values returns the elements as float64 whatever the dtype: Floats itself,
// or the integers converted (exact below 2^53 in magnitude).
func (a *Array) Values() []float64 {
	if !a.IsInt() {
		return a.Floats
	}
	out := make([]float64, len(a.Ints))
	for i, v := range a.Ints {
		out[i] = float64(v)
	}
	return out
}

var (
	descrRE   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	fortranRE = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	shapeRE   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// Decode parses one .npy array held in raw. Errors say what is wrong without
// naming the file; callers wrap them with the file and array name.
func Decode(raw []byte) (*Array, error) {
	if len(raw) < 10 || string(raw[:6]) != "\x93NUMPY" {
		return nil, errors.New("not a .npy array (bad magic)")
	}
	var hl, off int
	switch raw[6] {
	case 1:
		hl, off = int(binary.LittleEndian.Uint16(raw[8:10])), 10
	case 2, 3:
		if len(raw) < 12 {
			return nil, errors.New("truncated .npy header")
		}
		hl, off = int(binary.LittleEndian.Uint32(raw[8:12])), 12
	default:
		return nil, fmt.Errorf("unsupported .npy version %d", raw[6])
	}
	if hl < 0 || hl > len(raw)-off {
		return nil, errors.New("truncated .npy header")
	}
	hdr, body := string(raw[off:off+hl]), raw[off+hl:]
	d, f, sh := descrRE.FindStringSubmatch(hdr), fortranRE.FindStringSubmatch(hdr), shapeRE.FindStringSubmatch(hdr)
	if d == nil || f == nil || sh == nil {
		return nil, fmt.Errorf("malformed .npy header %q", hdr)
	}
	if f[1] == "True" {
		return nil, errors.New("is stored in Fortran order; save a C-ordered array")
	}
	a := &Array{Dtype: d[1], Shape: []int{}}
	n := 1
	for _, tok := range strings.Split(sh[1], ",") {
		if tok = strings.TrimSpace(tok); tok == "" {
			continue
		}
		v, err := strconv.Atoi(tok)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("bad shape entry %q", tok)
		}
		if v > 0 && n > MaxBytes/v {
			return nil, fmt.Errorf("shape %s is too large", sh[1])
		}
		n *= v
		a.Shape = append(a.Shape, v)
	}
	size := 0
	switch a.Dtype {
	case Float64, Int64:
		size = 8
	case Int32, Float32:
		size = 4
	default:
		return nil, fmt.Errorf("has dtype %s, want little-endian float64, float32, int64 or int32", a.Dtype)
	}
	if n > len(body)/size || n*size != len(body) {
		return nil, fmt.Errorf("holds %d data bytes, want %v values of %d bytes", len(body), a.Shape, size)
	}
	switch a.Dtype {
	case Float64:
		a.Floats = make([]float64, n)
		for i := range a.Floats {
			a.Floats[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:]))
		}
	case Float32:
		a.Floats = make([]float64, n)
		for i := range a.Floats {
			a.Floats[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:])))
		}
	case Int64:
		a.Ints = make([]int64, n)
		for i := range a.Ints {
			a.Ints[i] = int64(binary.LittleEndian.Uint64(body[8*i:]))
		}
	case Int32:
		a.Ints = make([]int64, n)
		for i := range a.Ints {
			a.Ints[i] = int64(int32(binary.LittleEndian.Uint32(body[4*i:])))
		}
	}
	return a, nil
}

// ReadFile reads and decodes the .npy file at path; errors name the file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxBytes)
	}
	a, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Archive is an open .npz archive.
type Archive struct {
	zr *zip.Reader
}

// OpenArchive reads the zip directory of an .npz archive of size bytes.
func OpenArchive(r io.ReaderAt, size int64) (*Archive, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not a readable .npz archive: %v", err)
	}
	return &Archive{zr: zr}, nil
}

// ReadArchiveFile reads a whole .npz file into memory and opens it.
func ReadArchiveFile(path string) (*Archive, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := OpenArchive(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Has reports whether the archive holds the array name.
func (a *Archive) Has(name string) bool { return a.entry(name) != nil }

func (a *Archive) entry(name string) *zip.File {
	for _, f := range a.zr.File {
		if f.Name == name+".npy" || f.Name == name {
			return f
		}
	}
	return nil
}

// ErrMissing is returned (wrapped) by Array for an array the archive lacks.
var ErrMissing = errors.New("missing array")

// Array decodes the array name (stored as name.npy) of the archive.
func (a *Archive) Array(name string) (*Array, error) {
	zf := a.entry(name)
	if zf == nil {
		return nil, ErrMissing
	}
	if zf.UncompressedSize64 > MaxBytes {
		return nil, fmt.Errorf("array of %d bytes is too large", zf.UncompressedSize64)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, fmt.Errorf("cannot open: %v", err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	return Decode(raw)
}

// EncodeFloat64 returns the .npy bytes (format 1.0) of a float64 array of
// the given shape holding data in C order; it panics if the sizes disagree.
func EncodeFloat64(shape []int, data []float64) []byte {
	n := 1
	parts := make([]string, len(shape))
	for k, s := range shape {
		n *= s
		parts[k] = strconv.Itoa(s)
	}
	if n != len(data) {
		panic(fmt.Sprintf("npy: EncodeFloat64: shape %v holds %d values, got %d", shape, n, len(data)))
	}
	sh := strings.Join(parts, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	hdr := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }", sh)
	// Pad with spaces so magic+header is a multiple of 64 bytes, ending in '\n'.
	total := 10 + len(hdr) + 1
	pad := (64 - total%64) % 64
	hdr += strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	buf := make([]byte, 8)
	for _, v := range data {
		binary.LittleEndian.PutUint64(buf, math.Float64bits(v))
		b.Write(buf)
	}
	return b.Bytes()
}
