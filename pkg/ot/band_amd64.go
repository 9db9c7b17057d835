package ot

import "golang.org/x/sys/cpu"

// hasFMA reports whether the AVX2+FMA band kernel can run on this CPU.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasAVX512 reports whether fmaBand64 (AVX-512F, 64 columns at a time) can
// run; x/sys/cpu sets HasAVX512F only when the OS saves the ZMM state.
var hasAVX512 = hasFMA && cpu.X86.HasAVX512F

// fmaBand64 is implemented in band_amd64.s.
//
//go:noescape
func fmaBand64(out *float64, src *float64, stride int, coef *float64, ncoef int, nblk int)

// fmaBand32 is implemented in band_amd64.s.
//
//go:noescape
func fmaBand32(out *float64, src *float64, stride int, coef *float64, ncoef int, nblk int)

// fmaBand16 is implemented in band_amd64.s.
//
//go:noescape
func fmaBand16(out *float64, src *float64, stride int, coef *float64, ncoef int)

// fmaBand4 is implemented in band_amd64.s; it reads 12 columns of every
// source row whatever nvec is.
//
//go:noescape
func fmaBand4(out *float64, src *float64, stride int, coef *float64, ncoef int, nvec int)
