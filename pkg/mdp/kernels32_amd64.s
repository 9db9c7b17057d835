#include "textflag.h"

// The float32 block kernels of block32.go: AVX, one block of 16 columns in
// two Y registers, as kernels_amd64.s does for 8 float64 columns. No fused
// multiply-add: each lane performs the same IEEE operations in the same
// order as the Go loop it replaces (whose products are rounded by an
// explicit float32 conversion), so the results are the same bit for bit.
// Dot products convert each rounded float32 product to float64 (exact)
// and sum in four Y registers of four float64 lanes.
//
// Registers of the row loops as in kernels_amd64.s: SI = x, R9 = col,
// R10 = values, R11 = k (the entry), R12 = the row's end, R13 = scratch;
// the row's accumulator is Y0:Y1.

// BTERM32 adds (OP = VADDPS) or subtracts (VSUBPS) values[k]·x[col[k]]
// to or from the block accumulator.
#define BTERM32(OP) \
	MOVLQSX      (R9)(R11*4), R13; \
	SHLQ         $6, R13; \
	VBROADCASTSS (R10)(R11*4), Y2; \
	VMULPS       (SI)(R13*1), Y2, Y3; \
	OP           Y3, Y0, Y0; \
	VMULPS       32(SI)(R13*1), Y2, Y4; \
	OP           Y4, Y1, Y1

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
// For rows i = 0..n-1: y[i] = Σ_{k=ptr[i]}^{ptr[i+1]-1} val[k]·x[col[k]],
// summed in k order from +0.
TEXT ·mulBlock32AVX(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ ptr+16(FP), R8
	MOVQ col+24(FP), R9
	MOVQ val+32(FP), R10
	MOVQ n+40(FP), CX
	TESTQ CX, CX
	JLE   mdone

mrow:
	MOVQ   (R8), R11
	MOVQ   8(R8), R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	CMPQ   R11, R12
	JGE    mstore

mloop:
	BTERM32(VADDPS)
	INCQ R11
	CMPQ R11, R12
	JL   mloop

mstore:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, DI
	ADDQ    $8, R8
	DECQ    CX
	JNZ     mrow

mdone:
	VZEROUPPER
	RET

// func precondBlock32AVX(x *blk32, lu *float32, col *int32, ptr *int, diag *int, inv *float32, n int)
// Forward: for i = 0..n-1, x[i] -= lu[k]·x[col[k]] for k = ptr[i]..diag[i]-1
// in order; backward: for i = n-1..0, x[i] -= lu[k]·x[col[k]] for
// k = diag[i]+1..ptr[i+1]-1 in order, then x[i] *= inv[i].
TEXT ·precondBlock32AVX(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ lu+8(FP), R10
	MOVQ col+16(FP), R9
	MOVQ ptr+24(FP), R8
	MOVQ diag+32(FP), BX
	MOVQ inv+40(FP), DX
	MOVQ n+48(FP), CX
	XORQ AX, AX
	TESTQ CX, CX
	JLE   pdone
	MOVQ  SI, DI

pfrow:
	MOVQ    (R8)(AX*8), R11
	MOVQ    (BX)(AX*8), R12
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	CMPQ    R11, R12
	JGE     pfstore

pfloop:
	BTERM32(VSUBPS)
	INCQ R11
	CMPQ R11, R12
	JL   pfloop

pfstore:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, DI
	INCQ    AX
	CMPQ    AX, CX
	JL      pfrow

pbrow:
	DECQ    AX
	JL      pdone
	MOVQ    AX, DI
	SHLQ    $6, DI
	ADDQ    SI, DI
	MOVQ    (BX)(AX*8), R11
	INCQ    R11
	MOVQ    8(R8)(AX*8), R12
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	CMPQ    R11, R12
	JGE     pbscale

pbloop:
	BTERM32(VSUBPS)
	INCQ R11
	CMPQ R11, R12
	JL   pbloop

pbscale:
	VBROADCASTSS (DX)(AX*4), Y2
	VMULPS       Y2, Y0, Y0
	VMULPS       Y2, Y1, Y1
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	JMP          pbrow

pdone:
	VZEROUPPER
	RET

// func blockDots32AVX(dst *lanes, x, y *blk32, n int)
// dst[jj] = Σ_s float64(x[s][jj]·y[s][jj]), the products rounded to
// float32, summed in float64 in s order from +0.
TEXT ·blockDots32AVX(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DX
	MOVQ   n+24(FP), CX
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
	MOVQ    y+0(FP), DI
	MOVQ    a+8(FP), DX
	MOVQ    x+16(FP), SI
	MOVQ    n+24(FP), CX
	VMOVUPS (DX), Y4
	VMOVUPS 32(DX), Y5
	TESTQ   CX, CX
	JLE     sdone

sloop:
	VMULPS  (SI), Y4, Y2
	VMOVUPS (DI), Y0
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	VMULPS  32(SI), Y5, Y3
	VMOVUPS 32(DI), Y1
	VADDPS  Y3, Y1, Y1
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     sloop

sdone:
	VZEROUPPER
	RET

// func blockAxpyDots32AVX(dst *lanes, w, a, v, u *blk32, n int)
// For s = 0..n-1: w[s][jj] += a[jj]·v[s][jj], then dst[jj] = Σ_s
// float64(w[s][jj]·u[s][jj]) of the new w (u may be w): blockAddScaled32AVX
// and blockDots32AVX in one pass.
TEXT ·blockAxpyDots32AVX(SB), NOSPLIT, $0-48
	MOVQ    dst+0(FP), R8
	MOVQ    w+8(FP), DI
	MOVQ    a+16(FP), AX
	MOVQ    v+24(FP), SI
	MOVQ    u+32(FP), DX
	MOVQ    n+40(FP), CX
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
