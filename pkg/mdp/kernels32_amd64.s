#include "textflag.h"
#include "blockkernels_amd64.h"

// The float32 block kernels of block32.go: AVX, one block of 16 columns in
// two Y registers, as kernels_amd64.s does for 8 float64 columns. No fused
// multiply-add: each lane performs the same IEEE operations in the same
// order as the Go loop it replaces (whose products are rounded by an
// explicit float32 conversion), so the results are the same bit for bit.
// Dot products convert each rounded float32 product to float64 (exact)
// and sum in four Y registers of four float64 lanes. The product, the
// substitutions and the scaled sum are the bodies of blockkernels_amd64.h,
// shared with the float64 kernels.

// DOT32 adds the float32 products in Y4 (lanes OFF..OFF+7) to the float64
// accumulators LO (lanes OFF..OFF+3) and HI (OFF+4..OFF+7); it uses Y5
// and overwrites X4.
#define DOT32(LO, HI) \
	VCVTPS2PD    X4, Y5; \
	VADDPD       Y5, LO, LO; \
	VEXTRACTF128 $1, Y4, X4; \
	VCVTPS2PD    X4, Y5; \
	VADDPD       Y5, HI, HI

// func mulBlock32AVX(y, x *blk32, ptr *int, col *int32, val *float32, n int)
TEXT ·mulBlock32AVX(SB), NOSPLIT, $0-48
	MULBLOCK(VMOVUPS, VBROADCASTSS, VMULPS, VADDPS, VXORPS, 4)

// func precondBlock32AVX(x *blk32, lu *float32, col *int32, ptr *int, diag *int, inv *float32, n int)
TEXT ·precondBlock32AVX(SB), NOSPLIT, $0-56
	PRECONDBLOCK(VMOVUPS, VBROADCASTSS, VMULPS, VSUBPS, 4)

// func blockDots32AVX(dst *lanes, x, y *blk32, n int)
// dst[jj] = Σ_s float64(x[s][jj]·y[s][jj]), the products rounded to
// float32, summed in float64 in s order from +0.
TEXT ·blockDots32AVX(SB), NOSPLIT, $0-32
	DOTSARGS
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	TESTQ  CX, CX
	JLE    ddone

dloop:
	VMOVUPS (SI), Y4
	VMULPS  (DX), Y4, Y4
	DOT32(Y0, Y1)
	VMOVUPS 32(SI), Y4
	VMULPS  32(DX), Y4, Y4
	DOT32(Y6, Y7)
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     dloop

ddone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y6, 64(DI)
	VMOVUPD Y7, 96(DI)
	VZEROUPPER
	RET

// func blockAddScaled32AVX(y, a, x *blk32, n int)
// y[s][jj] += a[jj]·x[s][jj] for s = 0..n-1.
TEXT ·blockAddScaled32AVX(SB), NOSPLIT, $0-32
	ADDSCALEDBLOCK(VMOVUPS, VMULPS, VADDPS)

// func blockAxpyDots32AVX(dst *lanes, w, a, v, u *blk32, n int)
// For s = 0..n-1: w[s][jj] += a[jj]·v[s][jj], then dst[jj] = Σ_s
// float64(w[s][jj]·u[s][jj]) of the new w (u may be w): blockAddScaled32AVX
// and blockDots32AVX in one pass.
TEXT ·blockAxpyDots32AVX(SB), NOSPLIT, $0-48
	AXPYDOTSARGS
	VMOVUPS (AX), Y2
	VMOVUPS 32(AX), Y3
	VXORPD  Y0, Y0, Y0
	VXORPD  Y1, Y1, Y1
	VXORPD  Y6, Y6, Y6
	VXORPD  Y7, Y7, Y7
	TESTQ   CX, CX
	JLE     bdone

bloop:
	VMULPS  (SI), Y2, Y4
	VADDPS  (DI), Y4, Y4
	VMOVUPS Y4, (DI)
	VMULPS  (DX), Y4, Y4
	DOT32(Y0, Y1)
	VMULPS  32(SI), Y3, Y4
	VADDPS  32(DI), Y4, Y4
	VMOVUPS Y4, 32(DI)
	VMULPS  32(DX), Y4, Y4
	DOT32(Y6, Y7)
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     bloop

bdone:
	VMOVUPD Y0, (R8)
	VMOVUPD Y1, 32(R8)
	VMOVUPD Y6, 64(R8)
	VMOVUPD Y7, 96(R8)
	VZEROUPPER
	RET

// func blockScaleTwo32AVX(v, u, w, a *blk32, n int)
// v[s][jj] = u[s][jj] = w[s][jj]·a[jj] for s = 0..n-1.
TEXT ·blockScaleTwo32AVX(SB), NOSPLIT, $0-40
	MOVQ    v+0(FP), DI
	MOVQ    u+8(FP), DX
	MOVQ    w+16(FP), SI
	MOVQ    a+24(FP), AX
	MOVQ    n+32(FP), CX
	VMOVUPS (AX), Y4
	VMOVUPS 32(AX), Y5
	TESTQ   CX, CX
	JLE     tdone

tloop:
	VMULPS  (SI), Y4, Y0
	VMULPS  32(SI), Y5, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     tloop

tdone:
	VZEROUPPER
	RET
