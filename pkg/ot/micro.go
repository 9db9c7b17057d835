package ot

import "gonum.org/v1/gonum/floats"

// Hand-written register-blocked micro-kernel for the last-axis pass (post = 1),
// where rows are short (n_k ≲ 40) and per-row gonum floats.Dot calls spend
// much of their time in call overhead: each kernel entry feeds four outputs.
// (A pure-Go register-blocked kernel for the post > 1 passes measured about
// twice slower than gonum's assembly floats.AddScaled, so those use gonum.)

// passRows computes, for rows p in [p0, p1) of a (pre×nk) matrix src,
// out[p*nk+i] = Σ_{j∈band(i)} m[i*nk+j]·src[p*nk+j] (the last axis, post = 1),
// four rows at a time so that each kernel entry feeds four outputs.
func passRows(out, src, m []float64, lo, hi []int, nk, p0, p1 int) {
	p := p0
	for ; p+3 < p1; p += 4 {
		r0 := src[p*nk : (p+1)*nk]
		r1 := src[(p+1)*nk : (p+2)*nk]
		r2 := src[(p+2)*nk : (p+3)*nk]
		r3 := src[(p+3)*nk : (p+4)*nk]
		for i := 0; i < nk; i++ {
			mi := m[i*nk : (i+1)*nk]
			var a0, a1, a2, a3 float64
			jlo, jhi := lo[i], hi[i]
			if jhi > nk {
				jhi = nk
			}
			for j := jlo; j < jhi; j++ {
				c := mi[j]
				a0 += c * r0[j]
				a1 += c * r1[j]
				a2 += c * r2[j]
				a3 += c * r3[j]
			}
			out[p*nk+i] = a0
			out[(p+1)*nk+i] = a1
			out[(p+2)*nk+i] = a2
			out[(p+3)*nk+i] = a3
		}
	}
	for ; p < p1; p++ {
		r := src[p*nk : (p+1)*nk]
		for i := 0; i < nk; i++ {
			mi := m[i*nk : (i+1)*nk]
			var a float64
			for j := lo[i]; j < hi[i]; j++ {
				a += mi[j] * r[j]
			}
			out[p*nk+i] = a
		}
	}
}

// bandCols sets out[q] = Σ_{j<len(coef)} coef[j]·src[j·stride + q] for q in
// [0, len(out)). With AVX2+FMA it runs 32 columns at a time in assembly with
// the sums held in registers (one load per multiply-add, no stores inside the
// band); the remaining columns, or all of them without FMA, use gonum's
// floats.AddScaled.
func bandCols(out, src []float64, stride int, coef []float64) {
	w := len(out)
	nc := len(coef)
	if nc == 0 {
		for q := range out {
			out[q] = 0
		}
		return
	}
	if need := (nc-1)*stride + w; len(src) < need {
		panic("ot: bandCols: src too short")
	}
	done := 0
	if hasFMA && !useGonumPasses && w >= 32 {
		nblk := w / 32
		fmaBand32(&out[0], &src[0], stride, &coef[0], nc, nblk)
		done = nblk * 32
	}
	if done == w {
		return
	}
	rest := out[done:]
	for q := range rest {
		rest[q] = 0
	}
	for j, c := range coef {
		floats.AddScaled(rest, c, src[j*stride+done:j*stride+w])
	}
}
