package privacy

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// Source draws standard normal variates. *rand.Rand (math/rand/v2) is one:
// seeded (rand.NewPCG) in studies and tests, CryptoSource in production.
type Source interface {
	NormFloat64() float64
}

// cryptoUint64 is a rand.Source reading crypto/rand.
type cryptoUint64 struct{}

// Uint64 returns 64 bits from the operating system's CSPRNG (crypto/rand.Read
// does not fail on supported platforms; it aborts the program if it cannot
// read randomness, which is what a privacy mechanism wants).
func (cryptoUint64) Uint64() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// CryptoSource returns a Source whose normal variates are built (by
// math/rand/v2's ziggurat) from crypto/rand's bits: the production source of
// privacy noise, never seeded and not reproducible.
func CryptoSource() Source { return rand.New(cryptoUint64{}) }

// Clip writes clip_C(θ) = θ·min(1, C/‖θ‖₂) into dst (allocated when nil or
// too short) and returns it; dst may be theta.
func Clip(dst, theta []float64, c float64) []float64 {
	if cap(dst) < len(theta) {
		dst = make([]float64, len(theta))
	}
	dst = dst[:len(theta)]
	var ss float64
	for _, v := range theta {
		ss += v * v
	}
	scale := 1.0
	if n := math.Sqrt(ss); n > c {
		scale = c / n
	}
	for i, v := range theta {
		dst[i] = v * scale
	}
	return dst
}

// Declaration is what a client states about the noise on a submitted θ: the
// (ε, δ) it promises over Rounds releases, the clipping norm C, the noise
// multiplier σ (noise standard deviation σ·2C) and the conversion used to
// calibrate σ. The server records it with the submission and checks it
// against the task's Requirement.
type Declaration struct {
	Epsilon    float64    `json:"epsilon"`
	Delta      float64    `json:"delta"`
	Clip       float64    `json:"clip"`
	Sigma      float64    `json:"sigma"`
	Rounds     int        `json:"rounds"`
	Conversion Conversion `json:"conversion"`
}

// NoiseStd is the standard deviation σ·Δ = σ·2C of each noise component.
func (d Declaration) NoiseStd() float64 { return d.Sigma * 2 * d.Clip }

// minSigmaSlack is the relative slack allowed between a declared σ and the
// σ the server recomputes (a client built with other floating-point
// rounding may land an ulp or so lower).
const minSigmaSlack = 1e-9

// Validate checks that d is a well-formed and truthful declaration: valid
// parameters, and a σ at least the smallest that gives (ε, δ) over Rounds
// releases (the analytic accounting, which no conversion undercuts).
func (d Declaration) Validate() error {
	p := Params{Epsilon: d.Epsilon, Delta: d.Delta, Clip: d.Clip, Rounds: d.Rounds, Conversion: d.Conversion}
	if d.Rounds == 0 {
		return &ParamError{Field: "rounds", Value: d.Rounds, Want: "an integer ≥ 1"}
	}
	if d.Conversion == "" {
		return &ParamError{Field: "conversion", Value: "", Want: `"analytic" or "zcdp"`}
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if !(d.Sigma > 0) || math.IsInf(d.Sigma, 0) {
		return &ParamError{Field: "sigma", Value: d.Sigma, Want: "a finite value > 0"}
	}
	need, _, err := Calibrate(d.Epsilon, d.Delta, d.Rounds, ConversionAnalytic)
	if err != nil {
		return err
	}
	if d.Sigma < need*(1-minSigmaSlack) {
		return &ParamError{Field: "sigma", Value: d.Sigma,
			Want: fmt.Sprintf("≥ %.17g, the smallest noise multiplier giving (ε = %v, δ = %v) over %d rounds", need, d.Epsilon, d.Delta, d.Rounds)}
	}
	return nil
}

// Requirement is the minimum privacy level a task demands of every
// submission: ε ≤ MaxEpsilon and δ ≤ MaxDelta over all the task's rounds,
// and the clipping norm C every client uses.
//
// C is set by the task, not by each client, because C is sent in clear with
// every declaration (to the server, and inside fused results to every
// client) and the mechanism protects θ, not C: a client that chose C from
// its own θ (say C = ‖θ‖) would publish ‖θ‖ beside the noised θ. A task's C
// comes from public or pilot data. ClientClip lets each client choose C
// instead, for a federation that accepts that leak (or whose clients choose
// C from data independent of what they protect).
type Requirement struct {
	MaxEpsilon float64 `json:"max_epsilon"`
	MaxDelta   float64 `json:"max_delta"`
	// Clip is the clipping norm C every declaration must carry (0: not set).
	Clip float64 `json:"clip,omitempty"`
	// ClientClip lets each client choose its C (Clip must then be 0).
	ClientClip bool `json:"client_clip,omitempty"`
}

// Validate checks a requirement, naming the bad field. A requirement that
// sets neither Clip nor ClientClip is valid (tasks stored before the task
// set C accept any C); CheckClipSet refuses it for a new task.
func (r Requirement) Validate() error {
	if !(r.MaxEpsilon > 0) || math.IsInf(r.MaxEpsilon, 0) {
		return &ParamError{Field: "max_epsilon", Value: r.MaxEpsilon, Want: "a finite value > 0"}
	}
	if !(r.MaxDelta > 0 && r.MaxDelta < 1) {
		return &ParamError{Field: "max_delta", Value: r.MaxDelta, Want: "a value in (0, 1)"}
	}
	if r.Clip != 0 && (!(r.Clip > 0) || math.IsInf(r.Clip, 0)) {
		return &ParamError{Field: "clip", Value: r.Clip, Want: "a finite value > 0 (or 0 with client_clip)"}
	}
	if r.Clip != 0 && r.ClientClip {
		return &ParamError{Field: "client_clip", Value: true, Want: "false when clip is set (the task sets C, or each client does, not both)"}
	}
	return nil
}

// CheckClipSet refuses a requirement that neither sets the clipping norm
// nor lets clients choose it: what a new task must say.
func (r Requirement) CheckClipSet() error {
	if r.Clip == 0 && !r.ClientClip {
		return &ParamError{Field: "clip", Value: 0.0,
			Want: "the clipping norm C every client uses (> 0, chosen from public or pilot data), or client_clip: true to let each client choose it (C travels in clear: a C chosen from the client's own θ leaks it)"}
	}
	return nil
}

// Check returns nil when d is a valid declaration (Validate) that meets r
// for a task of rounds rounds, else an error saying what is missing.
func (r Requirement) Check(d *Declaration, rounds int) error {
	if d == nil {
		return fmt.Errorf("no privacy declaration, and the task requires (ε ≤ %v, δ ≤ %v)-DP", r.MaxEpsilon, r.MaxDelta)
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("privacy declaration: %w", err)
	}
	switch {
	case d.Epsilon > r.MaxEpsilon:
		return fmt.Errorf("privacy declaration: epsilon %v above the task's max_epsilon %v", d.Epsilon, r.MaxEpsilon)
	case d.Delta > r.MaxDelta:
		return fmt.Errorf("privacy declaration: delta %v above the task's max_delta %v", d.Delta, r.MaxDelta)
	case d.Rounds < rounds:
		return fmt.Errorf("privacy declaration: accounts for %d rounds, the task has %d", d.Rounds, rounds)
	case r.Clip != 0 && d.Clip != r.Clip:
		return fmt.Errorf("privacy declaration: clip %v, the task sets C = %v (the task chooses the clipping norm: C travels in clear, so a C a client chose from its own θ would leak it)", d.Clip, r.Clip)
	}
	return nil
}

// Mechanism is a calibrated clip-and-noise release (see the package comment).
type Mechanism struct {
	decl Declaration
}

// New calibrates a mechanism for p (Calibrate), refusing invalid parameters
// with a *ParamError.
func New(p Params) (*Mechanism, error) {
	p = p.withDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sigma, _, err := Calibrate(p.Epsilon, p.Delta, p.Rounds, p.Conversion)
	if err != nil {
		return nil, err
	}
	return &Mechanism{decl: Declaration{Epsilon: p.Epsilon, Delta: p.Delta, Clip: p.Clip, Sigma: sigma,
		Rounds: p.Rounds, Conversion: p.Conversion}}, nil
}

// Declaration returns what the mechanism declares with each release.
func (m *Mechanism) Declaration() Declaration { return m.decl }

// Release writes clip_C(θ) + σ·2C·g, g ~ N(0, I) drawn from src in index
// order, into dst (allocated when nil or too short; dst may be theta) and
// returns it.
func (m *Mechanism) Release(dst, theta []float64, src Source) []float64 {
	dst = Clip(dst, theta, m.decl.Clip)
	std := m.decl.NoiseStd()
	for i := range dst {
		dst[i] += std * src.NormFloat64()
	}
	return dst
}
