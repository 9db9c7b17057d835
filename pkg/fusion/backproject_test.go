package fusion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// freshLeastSquares solves with a factorization of its own (not the kept
// one), after checking it against gonum's mat.QR least squares.
func freshLeastSquares(t testing.TB, phi *mat.Dense, r []float64) []float64 {
	var f factorization
	f.factorize(phi)
	if f.err != nil {
		t.Fatal(f.err)
	}
	got := f.leastSquares(r)
	var qr mat.QR
	qr.Factorize(phi)
	n, _ := phi.Dims()
	var x mat.VecDense
	if err := qr.SolveVecTo(&x, false, mat.NewVecDense(n, slices.Clone(r))); err != nil {
		t.Fatal(err)
	}
	for k, g := range got {
		if want := x.AtVec(k); math.Abs(g-want) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("θ[%d] = %v, gonum's QR least squares gives %v", k, g, want)
		}
	}
	return got
}

func randomTall(rng *rand.Rand, n, d int) (*mat.Dense, []float64) {
	phi := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			phi.Set(i, j, rng.NormFloat64())
		}
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	return phi, r
}

// TestBackProjectReusesFactorizationByContent checks that a kept
// factorization gives θ bit for bit equal to a fresh QR's, for a second
// reward on the same Φ, for an equal Φ in other storage, and that changing
// Φ's entries in place (same pointer) is not served the old factorization.
func TestBackProjectReusesFactorizationByContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	phi, r := randomTall(rng, 300, 7)
	_, r2 := randomTall(rng, 300, 7)
	check := func(name string, phi *mat.Dense, r []float64) {
		t.Helper()
		got, err := BackProject(phi, r)
		if err != nil {
			t.Fatal(err)
		}
		want := freshLeastSquares(t, phi, r)
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%s: θ[%d] = %v, a fresh factorization gives %v", name, k, got[k], want[k])
			}
		}
	}
	check("first", phi, r)
	f, _ := factorizations.get(phi)
	check("second reward", phi, r2)
	if g, _ := factorizations.get(mat.DenseCopyOf(phi)); g != f {
		t.Fatal("an equal Φ in other storage got another factorization")
	}
	check("copy", mat.DenseCopyOf(phi), r)
	phi.Set(3, 2, phi.At(3, 2)+1)
	if g, _ := factorizations.get(phi); g == f {
		t.Fatal("Φ changed in place was served its old factorization")
	}
	check("changed in place", phi, r)
	// A column view (stride ≠ columns) is keyed by its entries, not its storage.
	wide, _ := randomTall(rng, 300, 9)
	view := wide.Slice(0, 300, 1, 8).(*mat.Dense)
	check("view", view, r)
	if g, _ := factorizations.get(view); g == nil {
		t.Fatal("no factorization for a view")
	}
	if k1, k2 := matrixKey(view), matrixKey(mat.DenseCopyOf(view)); k1 != k2 {
		t.Fatal("a view and its copy have different keys")
	}
}

// TestBackProjectCacheBounded checks that the kept factorizations stay
// within maxCachedFactorizationBytes however many matrices pass through.
func TestBackProjectCacheBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n, d := 20000, 60 // 9.6 MB each
	for range 40 {
		phi, r := randomTall(rng, n, d)
		if _, err := BackProject(phi, r); err != nil {
			t.Fatal(err)
		}
		factorizations.mu.Lock()
		b, k := factorizations.bytes, len(factorizations.order)
		factorizations.mu.Unlock()
		if b > maxCachedFactorizationBytes {
			t.Fatalf("cache holds %d bytes in %d factorizations, bound %d", b, k, maxCachedFactorizationBytes)
		}
	}
}

// BenchmarkBackProject times one least-squares projection onto a Φ of
// CartPole's fine lattice's size (100,802 pairs × 65 features): "fresh"
// factorizes Φ for the call (as every fusion did before the cache),
// "kept" finds its factorization kept (hash, lookup and solve).
func BenchmarkBackProject(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	phi, r := randomTall(rng, 100802, 65)
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			factorizations = factorizationCache{}
			if _, err := BackProject(phi, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		if _, err := BackProject(phi, r); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := BackProject(phi, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBackProjectConcurrent solves on one kept factorization from several
// goroutines at once (as a study's fusion units of one lattice do): every
// θ must equal a fresh factorization's, bit for bit. gonum's solve writes
// into the factor while it runs, so unserialized solves corrupt each other.
func TestBackProjectConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	phi, _ := randomTall(rng, 400, 9)
	const workers, rounds = 4, 50
	rs := make([][]float64, workers)
	want := make([][]float64, workers)
	for w := range workers {
		_, rs[w] = randomTall(rng, 400, 1)
		want[w] = freshLeastSquares(t, phi, rs[w])
	}
	errs := make(chan string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				got, err := BackProject(phi, rs[w])
				if err != nil {
					errs <- err.Error()
					return
				}
				for k := range got {
					if got[k] != want[w][k] {
						errs <- fmt.Sprintf("worker %d: θ[%d] = %v, want %v", w, k, got[k], want[w][k])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
