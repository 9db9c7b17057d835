package fusion

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// BackProject returns θ = argmin_θ ‖Φθ − r‖₂, solved with gonum's Householder
// QR factorization of Φ (numerically stabler than (ΦᵀΦ)⁻¹Φᵀr). It errors if
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
	var x mat.VecDense
	// gonum's solve applies Q by LAPACK's Dorm2r, which sets each
	// reflector's diagonal entry to 1 in the factor while it applies it and
	// restores it after: solves on one factorization must not overlap.
	f.solve.Lock()
	err = f.qr.SolveVecTo(&x, false, mat.NewVecDense(n, append([]float64(nil), r...)))
	f.solve.Unlock()
	if err != nil {
		return nil, fmt.Errorf("fusion: least squares: %w", err)
	}
	out := make([]float64, d)
	for k := range d {
		out[k] = x.AtVec(k)
	}
	return out, nil
}

// factorization is the QR of one Φ, or why it cannot serve least squares.
type factorization struct {
	once  sync.Once
	solve sync.Mutex // held by a solve (see BackProject)
	qr    mat.QR
	err   error
	bytes int
}

// factorize sets f to the QR of phi and checks its rank.
func (f *factorization) factorize(phi *mat.Dense) {
	_, d := phi.Dims()
	f.qr.Factorize(phi)
	var rr mat.Dense
	f.qr.RTo(&rr)
	maxDiag := 0.0
	for k := range d {
		maxDiag = math.Max(maxDiag, math.Abs(rr.At(k, k)))
	}
	for k := range d {
		if math.Abs(rr.At(k, k)) <= 1e-12*maxDiag || maxDiag == 0 {
			f.err = fmt.Errorf("fusion: Φ is rank deficient (|R[%d,%d]| = %g)", k, k, rr.At(k, k))
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
