package attack

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestSpikeTheta checks the spike's least-squares θ by its optimality
// condition Φᵀ(Φθ − s) = 0 on random features, against the spike itself
// on one-hot features, and the error on rank-deficient ones.
func TestSpikeTheta(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	phi := mat.NewDense(12, 3, nil)
	for i := range 12 {
		for j := range 3 {
			phi.Set(i, j, rng.NormFloat64())
		}
	}
	th, err := SpikeTheta(phi, 2, 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	s := make([]float64, 12)
	for a := range 4 {
		s[2*4+a] = 1.5
	}
	r := mat.NewVecDense(12, nil)
	r.MulVec(phi, mat.NewVecDense(3, th))
	r.SubVec(r, mat.NewVecDense(12, s))
	for j := range 3 {
		if g := mat.Dot(phi.ColView(j), r); math.Abs(g) > 1e-12 {
			t.Errorf("Φᵀ(Φθ − s)[%d] = %v, want 0", j, g)
		}
	}
	eye := mat.NewDense(8, 8, nil)
	for i := range 8 {
		eye.Set(i, i, 1)
	}
	oneHot, err := SpikeTheta(eye, 1, 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "one-hot spike", oneHot, []float64{0, 0, 0, 0, 1.5, 1.5, 1.5, 1.5}, 1e-12, 0)
	if _, err := SpikeTheta(mat.NewDense(8, 2, nil), 1, 4, 6); err == nil || !strings.Contains(err.Error(), "rank deficient") {
		t.Errorf("spike on a zero Φ: error %v, want rank deficient", err)
	}
}

// TestGaussianTheta checks the draw's norm, that one stream gives one draw
// and another stream another, and the zero norm.
func TestGaussianTheta(t *testing.T) {
	g1 := GaussianTheta(rand.New(rand.NewPCG(3, 4)), 5, 3)
	g2 := GaussianTheta(rand.New(rand.NewPCG(3, 4)), 5, 3)
	g3 := GaussianTheta(rand.New(rand.NewPCG(3, 5)), 5, 3)
	approx.Equal(t, "norm", floats.Norm(g1, 2), 3, 0, 1e-14)
	approx.Slices(t, "determinism", g2, g1, 0, 0)
	if slices.Equal(g1, g3) {
		t.Errorf("two streams drew the same θ %v", g1)
	}
	approx.Slices(t, "zero norm", GaussianTheta(rand.New(rand.NewPCG(3, 4)), 3, 0), []float64{0, 0, 0}, 0, 0)
}
