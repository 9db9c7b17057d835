// Package nprand reproduces NumPy's default random generator,
// numpy.random.default_rng(seed) — a PCG64 bit generator seeded through a
// SeedSequence — for the draws fedirl's Gymnasium ports make: random(),
// uniform(lo, hi) and integers(lo, hi) of the default int64 dtype. The same
// seed gives the same values, bit for bit, as NumPy 1.17 and later, so that
// an environment seeded in Go draws the terrain Gymnasium draws for that
// seed.
//
// It deliberately covers only these methods (no normal, no arrays, no
// other bit generators) and imports nothing of the project.
package nprand

import "math/bits"

// SeedSequence constants (numpy/random/bit_generator.pyx).
const (
	initA    = 0x43b0d7e5
	multA    = 0x931e8875
	initB    = 0x8b51f9dd
	multB    = 0x58f38ded
	mixMultL = 0xca01f9dd
	mixMultR = 0x4973f715
	xshift   = 16
	poolSize = 4
)

// PCG64's 128-bit LCG multiplier, high and low words.
const (
	multHi = 0x2360ED051FC65DA4
	multLo = 0x4385DF649FCCF645
)

// Generator is numpy.random.Generator(PCG64(SeedSequence(seed))). The zero
// value is not usable; call New or Seed.
type Generator struct {
	stHi, stLo   uint64 // 128-bit state
	incHi, incLo uint64 // 128-bit increment (odd)
	hasU32       bool   // PCG64 keeps the upper half of a 64-bit draw for the next 32-bit one
	u32          uint32
}

// New returns the generator numpy.random.default_rng(seed) would return.
func New(seed uint64) *Generator {
	g := &Generator{}
	g.Seed(seed)
	return g
}

// Seed resets g to the state of numpy.random.default_rng(seed), without allocating.
func (g *Generator) Seed(seed uint64) {
	// SeedSequence(seed).entropy as 32-bit little-endian words.
	var ent [2]uint32
	n := 1
	ent[0] = uint32(seed)
	if seed>>32 != 0 {
		ent[1], n = uint32(seed>>32), 2
	}
	hashConst := uint32(initA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= multA
		v *= hashConst
		v ^= v >> xshift
		return v
	}
	mix := func(x, y uint32) uint32 {
		r := mixMultL*x - mixMultR*y
		r ^= r >> xshift
		return r
	}
	var pool [poolSize]uint32
	for i := range pool {
		if i < n {
			pool[i] = hashmix(ent[i])
		} else {
			pool[i] = hashmix(0)
		}
	}
	for src := range pool {
		for dst := range pool {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	// generate_state(4, uint64): 8 uint32 words, viewed as 4 little-endian uint64.
	var words [8]uint32
	hc := uint32(initB)
	for i := range words {
		v := pool[i%poolSize]
		v ^= hc
		hc *= multB
		v *= hc
		v ^= v >> xshift
		words[i] = v
	}
	var s [4]uint64
	for i := range s {
		s[i] = uint64(words[2*i]) | uint64(words[2*i+1])<<32
	}
	// pcg64_set_seed: state = s[0]:s[1] (high:low), inc = s[2]:s[3];
	// pcg_setseq_128_srandom_r.
	g.incHi = s[2]<<1 | s[3]>>63
	g.incLo = s[3]<<1 | 1
	g.stHi, g.stLo = 0, 0
	g.step()
	var c uint64
	g.stLo, c = bits.Add64(g.stLo, s[1], 0)
	g.stHi, _ = bits.Add64(g.stHi, s[0], c)
	g.step()
	g.hasU32, g.u32 = false, 0
}

// step advances the LCG: state = state·mult + inc (mod 2¹²⁸).
func (g *Generator) step() {
	hi, lo := bits.Mul64(g.stLo, multLo)
	hi += g.stHi*multLo + g.stLo*multHi
	var c uint64
	lo, c = bits.Add64(lo, g.incLo, 0)
	hi, _ = bits.Add64(hi, g.incHi, c)
	g.stHi, g.stLo = hi, lo
}

// Uint64 returns the next 64-bit output (XSL-RR of the advanced state).
func (g *Generator) Uint64() uint64 {
	g.step()
	return bits.RotateLeft64(g.stHi^g.stLo, -int(g.stHi>>58))
}

// uint32 is PCG64's next_uint32: the low half of a fresh 64-bit draw, then its high half.
func (g *Generator) uint32() uint32 {
	if g.hasU32 {
		g.hasU32 = false
		return g.u32
	}
	v := g.Uint64()
	g.hasU32, g.u32 = true, uint32(v>>32)
	return uint32(v)
}

// Random is Generator.random(): a float64 in [0, 1) from the top 53 bits of a draw.
func (g *Generator) Random() float64 {
	return float64(g.Uint64()>>11) * (1.0 / 9007199254740992.0)
}

// Uniform is Generator.uniform(lo, hi): lo + (hi − lo)·random(), the
// product rounded before the sum as numpy rounds it (the explicit
// conversion keeps a build that fuses multiply-adds, GOAMD64=v3 or arm64,
// from fusing it).
func (g *Generator) Uniform(lo, hi float64) float64 {
	return lo + float64((hi-lo)*g.Random())
}

// Integers is Generator.integers(lo, hi) for the default int64 dtype: a
// value in [lo, hi) by Lemire's method, on 32-bit draws when the range
// fits in 32 bits (as NumPy does). It panics if hi ≤ lo, where NumPy
// raises ValueError.
func (g *Generator) Integers(lo, hi int64) int64 {
	if hi <= lo {
		panic("nprand: Integers with hi <= lo")
	}
	rng := uint64(hi-lo) - 1
	if rng == 0 {
		return lo
	}
	if rng <= 0xFFFFFFFF {
		r32 := uint32(rng)
		excl := uint64(r32) + 1
		m := uint64(g.uint32()) * excl
		left := uint32(m)
		if uint64(left) < excl {
			threshold := uint32((uint64(0xFFFFFFFF) - uint64(r32)) % excl)
			for left < threshold {
				m = uint64(g.uint32()) * excl
				left = uint32(m)
			}
		}
		return lo + int64(m>>32)
	}
	if rng == 0xFFFFFFFFFFFFFFFF {
		return lo + int64(g.Uint64())
	}
	excl := rng + 1
	mhi, mlo := bits.Mul64(g.Uint64(), excl)
	if mlo < excl {
		threshold := (^uint64(0) - rng) % excl
		for mlo < threshold {
			mhi, mlo = bits.Mul64(g.Uint64(), excl)
		}
	}
	return lo + int64(mhi)
}
