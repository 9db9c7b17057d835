package npy

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDecodeNumPyFiles reads arrays written by NumPy (the fixtures of
// pkg/irl/testdata/make_mdp_npz.py) and checks their values.
func TestDecodeNumPyFiles(t *testing.T) {
	for _, name := range []string{"mdp.npz", "mdp_int32.npz"} {
		ar, err := ReadArchiveFile(filepath.Join("..", "irl", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		phi, err := ar.Array("features")
		if err != nil {
			t.Fatal(err)
		}
		if phi.Dtype != Float64 || !slices.Equal(phi.Shape, []int{6, 2}) || !slices.Equal(phi.Floats, []float64{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}) {
			t.Fatalf("%s features: %+v", name, phi)
		}
		rp, err := ar.Array("row_ptr")
		if err != nil {
			t.Fatal(err)
		}
		if !rp.IsInt() || !slices.Equal(rp.Ints, []int64{0, 1, 3, 4, 5, 5, 5}) {
			t.Fatalf("%s row_ptr: %+v", name, rp)
		}
		g, err := ar.Array("gamma")
		if err != nil || len(g.Shape) != 0 || g.Floats[0] != 0.9 {
			t.Fatalf("%s gamma: %+v %v", name, g, err)
		}
		if _, err := ar.Array("nothing"); err != ErrMissing {
			t.Fatalf("missing array: %v", err)
		}
	}
}

// TestEncodeRoundTrip: EncodeFloat64's bytes decode to the same values
// (NaN and infinities included) with a header NumPy's alignment rule accepts.
func TestEncodeRoundTrip(t *testing.T) {
	for _, shape := range [][]int{{3}, {2, 3}, {1, 1}, {0, 4}} {
		n := 1
		for _, s := range shape {
			n *= s
		}
		data := make([]float64, n)
		for i := range data {
			data[i] = float64(i) - 1.5
		}
		if n > 2 {
			data[1], data[2] = math.Inf(-1), math.NaN()
		}
		raw := EncodeFloat64(shape, data)
		if (10+int(raw[8])+int(raw[9])<<8)%64 != 0 {
			t.Fatalf("shape %v: header not 64-byte aligned", shape)
		}
		a, err := Decode(raw)
		if err != nil {
			t.Fatalf("shape %v: %v", shape, err)
		}
		if !slices.Equal(a.Shape, shape) || len(a.Floats) != n {
			t.Fatalf("shape %v: decoded %v", shape, a.Shape)
		}
		for i := range data {
			if math.Float64bits(a.Floats[i]) != math.Float64bits(data[i]) {
				t.Fatalf("shape %v: value %d = %v, want %v", shape, i, a.Floats[i], data[i])
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good := EncodeFloat64([]int{2, 2}, []float64{1, 2, 3, 4})
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"magic", []byte("not an array at all"), "bad magic"},
		{"truncated body", good[:len(good)-3], "holds 29 data bytes"},
		{"fortran", []byte(strings.Replace(string(good), "False", "True ", 1)), "Fortran order"},
		{"dtype", []byte(strings.Replace(string(good), "<f8", "<f2", 1)), "has dtype <f2, want little-endian float64, float32"},
		{"huge shape", []byte(strings.Replace(string(good), "(2, 2)", "(9999999999, 9)", 1)), "too large"},
		{"header", good[:14], "truncated .npy header"},
	} {
		if _, err := Decode(tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecode: no input panics.
func FuzzDecode(f *testing.F) {
	f.Add(EncodeFloat64([]int{2, 2}, []float64{1, 2, 3, 4}))
	f.Add([]byte("\x93NUMPY\x02\x00\x05\x00\x00\x00{'a'}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if a, err := Decode(data); err == nil && a.Len() != len(a.Floats)+len(a.Ints) {
			t.Fatalf("decoded %d values for shape %v", len(a.Floats)+len(a.Ints), a.Shape)
		}
	})
}

// TestDecodeFloat32AndValues: a float32 array decodes to the exact float64 of
// each float32, and Values converts integer arrays.
func TestDecodeFloat32AndValues(t *testing.T) {
	want := []float32{1.5, -0.1, 3e-8, 7}
	body := make([]byte, 4*len(want))
	for i, v := range want {
		binary.LittleEndian.PutUint32(body[4*i:], math.Float32bits(v))
	}
	hdr := strings.Replace(string(EncodeFloat64([]int{2, 2}, []float64{0, 0, 0, 0})), "<f8", "<f4", 1)
	raw := append([]byte(hdr[:len(hdr)-32]), body...)
	a, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range want {
		if a.Floats[i] != float64(v) || a.Values()[i] != float64(v) {
			t.Errorf("element %d: %v, want float64(float32 %v) = %v", i, a.Floats[i], v, float64(v))
		}
	}
	ia := &Array{Dtype: Int64, Shape: []int{2}, Ints: []int64{-3, 1 << 40}}
	if v := ia.Values(); v[0] != -3 || v[1] != 1<<40 {
		t.Errorf("Values of int64 %v = %v", ia.Ints, v)
	}
}
