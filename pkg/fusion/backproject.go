package fusion

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// BackProject returns θ = argmin_θ ‖Φθ − r‖₂, solved with the Householder
// QR factorization of Φ (gonum's LAPACK; numerically stabler than
// (ΦᵀΦ)⁻¹Φᵀr). It errors if
// Φ is not tall or is numerically rank deficient.
//
// The factorization is kept for the next call with the same Φ (equal
// dimensions and entries, recognised by a SHA-256 of them): every fusion of
// a study, and every client of a sweep, projects onto one Φ per
// (environment, lattice, features), and its QR (O(nd²)) costs about a
// hundred times the solve (O(nd)) and the hash. θ is bit for bit the one a
// fresh factorization gives.
func BackProject(phi *mat.Dense, r []float64) ([]float64, error) {
	n, d := phi.Dims()
	if len(r) != n {
		return nil, fmt.Errorf("fusion: reward has %d entries, Φ has %d rows", len(r), n)
	}
	if n < d {
		return nil, fmt.Errorf("fusion: Φ is %d×%d, need at least as many rows as columns", n, d)
	}
	f, err := factorizations.get(phi)
	if err != nil {
		return nil, err
	}
	return f.leastSquares(r), nil
}

// leastSquares returns argmin_θ ‖Φθ − r‖₂ for the factored Φ: Qᵀr by
// LAPACK's unblocked Dorm2r, one reflector at a time (O(nd); the blocked
// Dormqr behind mat.QR's solve formed the block reflectors' triangular
// factors again on every call, O(nd²), 0.14 s a projection on CartPole's
// fine lattice), then R⁻¹ of its first d entries. Dorm2r sets each
// reflector's diagonal entry to 1 in the factor while it applies it and
// restores it after (R's diagonal): solves on one factorization must not
// overlap.
func (f *factorization) leastSquares(r []float64) []float64 {
	n, d := f.a.Rows, f.a.Cols
	qtr := slices.Clone(r)
	out := qtr[:d:d]
	f.solve.Lock()
	lapackImpl.Dorm2r(blas.Left, blas.Trans, n, 1, d, f.a.Data, f.a.Stride, f.tau, qtr, 1, f.work)
	blas64.Trsv(blas.NoTrans, blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: d, Stride: f.a.Stride, Data: f.a.Data}, blas64.Vector{N: d, Data: out, Inc: 1})
	f.solve.Unlock()
	return slices.Clone(out)
}

var lapackImpl gonumlapack.Implementation

// factorization is the Householder QR of one Φ (LAPACK's compact form:
// R on and above the diagonal, the reflectors below it, their scalars in
// tau), or why it cannot serve least squares.
type factorization struct {
	once  sync.Once
	solve sync.Mutex // held by a solve (see BackProject)
	a     blas64.General
	tau   []float64
	work  []float64 // Dorm2r's scratch, used under solve
	err   error
	bytes int
}

// factorize sets f to the QR of phi and checks its rank.
func (f *factorization) factorize(phi *mat.Dense) {
	n, d := phi.Dims()
	f.a = blas64.General{Rows: n, Cols: d, Stride: d, Data: make([]float64, n*d)}
	for i := range n {
		copy(f.a.Data[i*d:(i+1)*d], phi.RawRowView(i))
	}
	f.tau, f.work = make([]float64, d), make([]float64, 1)
	lapack64.Geqrf(f.a, f.tau, f.work, -1)
	f.work = make([]float64, max(int(f.work[0]), d))
	lapack64.Geqrf(f.a, f.tau, f.work, len(f.work))
	maxDiag := 0.0
	for k := range d {
		maxDiag = math.Max(maxDiag, math.Abs(f.a.Data[k*d+k]))
	}
	for k := range d {
		if rk := f.a.Data[k*d+k]; math.Abs(rk) <= 1e-12*maxDiag || maxDiag == 0 {
			f.err = fmt.Errorf("fusion: Φ is rank deficient (|R[%d,%d]| = %g)", k, k, rk)
			return
		}
	}
}

// factorizationCache keeps the QR factorizations of the last feature
// matrices projected onto, up to maxCachedFactorizationBytes (the
// oldest dropped first; a CartPole fine Φ's QR is about 52 MB).
type factorizationCache struct {
	mu    sync.Mutex
	byKey map[[sha256.Size]byte]*factorization
	order [][sha256.Size]byte
	bytes int
}

const maxCachedFactorizationBytes = 256 << 20

var factorizations factorizationCache

// get returns the factorization of phi, computing it on first use.
func (c *factorizationCache) get(phi *mat.Dense) (*factorization, error) {
	k := matrixKey(phi)
	c.mu.Lock()
	if c.byKey == nil {
		c.byKey = map[[sha256.Size]byte]*factorization{}
	}
	f := c.byKey[k]
	if f == nil {
		n, d := phi.Dims()
		f = &factorization{bytes: 8 * (n*d + d)}
		c.byKey[k] = f
		c.order = append(c.order, k)
		c.bytes += f.bytes
		for c.bytes > maxCachedFactorizationBytes && len(c.order) > 1 {
			old := c.order[0]
			c.order = c.order[1:]
			c.bytes -= c.byKey[old].bytes
			delete(c.byKey, old) // holders keep theirs
		}
	}
	c.mu.Unlock()
	f.once.Do(func() { f.factorize(phi) })
	return f, f.err
}

// matrixKey is the SHA-256 of phi's dimensions and entries (row by row).
func matrixKey(phi *mat.Dense) [sha256.Size]byte {
	raw := phi.RawMatrix()
	h := sha256.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(raw.Rows))
	h.Write(buf[:])
	binary.LittleEndian.PutUint64(buf[:], uint64(raw.Cols))
	h.Write(buf[:])
	row := make([]byte, 8*raw.Cols)
	for i := range raw.Rows {
		for j, v := range raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols] {
			binary.LittleEndian.PutUint64(row[8*j:], math.Float64bits(v))
		}
		h.Write(row)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}
