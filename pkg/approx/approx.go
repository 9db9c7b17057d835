// Package approx compares floating-point numbers and slices with absolute and
// relative tolerances, for tests across fedirl. It reports the first entry
// that fails with its index, both values and the tolerance, so a failing test
// says exactly what is wrong.
package approx

import (
	"fmt"
	"math"
	"testing"
)

// Close reports whether |got-want| <= abs + rel*|want|. NaN is never close;
// equal infinities are.
func Close(got, want, abs, rel float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return false
	}
	if got == want {
		return true
	}
	return math.Abs(got-want) <= abs+rel*math.Abs(want)
}

// Equal fails t unless got is Close to want.
func Equal(t testing.TB, name string, got, want, abs, rel float64) {
	t.Helper()
	if !Close(got, want, abs, rel) {
		t.Fatalf("%s = %.17g, want %.17g (diff %.3g, tol abs %.3g rel %.3g)", name, got, want, got-want, abs, rel)
	}
}

// Slices fails t unless got and want have equal length and every entry is Close.
func Slices(t testing.TB, name string, got, want []float64, abs, rel float64) {
	t.Helper()
	if err := SlicesErr(got, want, abs, rel); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// SlicesErr returns an error naming the first entry of got that is not Close
// to want, or nil when all are.
func SlicesErr(got, want []float64, abs, rel float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if !Close(got[i], want[i], abs, rel) {
			return fmt.Errorf("entry %d = %.17g, want %.17g (diff %.3g, tol abs %.3g rel %.3g)", i, got[i], want[i], got[i]-want[i], abs, rel)
		}
	}
	return nil
}

// MaxAbsDiff returns max_i |a_i - b_i|; it panics if the lengths differ.
func MaxAbsDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		panic("approx: length mismatch")
	}
	m := 0.0
	for i := range a {
		if d := math.Abs(a[i] - b[i]); d > m || math.IsNaN(d) {
			m = d
		}
	}
	return m
}
