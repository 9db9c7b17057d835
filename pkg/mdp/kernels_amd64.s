#include "textflag.h"

// The Krylov kernels of block.go, sparse.go and ell.go: AVX for blocks of 8
// columns (one block in two Y registers), scalar SSE2 for single vectors.
// No fused multiply-add: each lane performs the same IEEE operations in
// the same order as the Go loop it replaces (whose products are rounded by
// an explicit float64 conversion, which forbids the compiler to fuse them
// under any GOAMD64), so the results are the same bit for bit.
//
// Registers shared by the row loops: SI = x, R9 = col, R10 = values,
// R11 = k (the entry), R12 = the row's end, R13 = scratch; the row's
// accumulator is Y0:Y1 (blocks) or X0 (single vectors).

// BTERM adds (OP = VADDPD) or subtracts (VSUBPD) values[k]·x[col[k]] to
// or from the block accumulator.
#define BTERM(OP) \
	MOVLQSX      (R9)(R11*4), R13; \
	SHLQ         $6, R13; \
	VBROADCASTSD (R10)(R11*8), Y2; \
	VMULPD       (SI)(R13*1), Y2, Y3; \
	OP           Y3, Y0, Y0; \
	VMULPD       32(SI)(R13*1), Y2, Y4; \
	OP           Y4, Y1, Y1

// STERM does the same for a single vector (OP = ADDSD or SUBSD).
#define STERM(OP) \
	MOVLQSX (R9)(R11*4), R13; \
	MOVSD   (R10)(R11*8), X2; \
	MULSD   (SI)(R13*8), X2; \
	OP      X2, X0

// MULARGS loads the arguments of mulBlockAVX and mulRowsAsm.
#define MULARGS \
	MOVQ y+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ ptr+16(FP), R8; \
	MOVQ col+24(FP), R9; \
	MOVQ val+32(FP), R10; \
	MOVQ n+40(FP), CX

// SUBARGS loads the arguments of precondBlockAVX and precondAsm, and sets
// the row index AX to 0.
#define SUBARGS \
	MOVQ x+0(FP), SI; \
	MOVQ lu+8(FP), R10; \
	MOVQ col+16(FP), R9; \
	MOVQ ptr+24(FP), R8; \
	MOVQ diag+32(FP), BX; \
	MOVQ inv+40(FP), DX; \
	MOVQ n+48(FP), CX; \
	XORQ AX, AX

// ELLARGS loads the arguments x, col and val of ellForwardAsm and
// ellBackwardAsm.
#define ELLARGS \
	MOVQ x+0(FP), SI; \
	MOVQ col+8(FP), R9; \
	MOVQ val+16(FP), R10

// func mulBlockAVX(y, x *blk, ptr *int, col *int32, val *float64, n int)
// For rows i = 0..n-1: y[i] = Σ_{k=ptr[i]}^{ptr[i+1]-1} val[k]·x[col[k]],
// summed in k order from +0.
TEXT ·mulBlockAVX(SB), NOSPLIT, $0-48
	MULARGS
	TESTQ CX, CX
	JLE   mdone

mrow:
	MOVQ   (R8), R11
	MOVQ   8(R8), R12
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	CMPQ   R11, R12
	JGE    mstore

mloop:
	BTERM(VADDPD)
	INCQ R11
	CMPQ R11, R12
	JL   mloop

mstore:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    $64, DI
	ADDQ    $8, R8
	DECQ    CX
	JNZ     mrow

mdone:
	VZEROUPPER
	RET

// func precondBlockAVX(x *blk, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int)
// Forward: for i = 0..n-1, x[i] -= lu[k]·x[col[k]] for k = ptr[i]..diag[i]-1
// in order; backward: for i = n-1..0, x[i] -= lu[k]·x[col[k]] for
// k = diag[i]+1..ptr[i+1]-1 in order, then x[i] *= inv[i].
TEXT ·precondBlockAVX(SB), NOSPLIT, $0-56
	SUBARGS
	TESTQ CX, CX
	JLE   pdone
	MOVQ  SI, DI

pfrow:
	MOVQ    (R8)(AX*8), R11
	MOVQ    (BX)(AX*8), R12
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	CMPQ    R11, R12
	JGE     pfstore

pfloop:
	BTERM(VSUBPD)
	INCQ R11
	CMPQ R11, R12
	JL   pfloop

pfstore:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
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
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	CMPQ    R11, R12
	JGE     pbscale

pbloop:
	BTERM(VSUBPD)
	INCQ R11
	CMPQ R11, R12
	JL   pbloop

pbscale:
	VBROADCASTSD (DX)(AX*8), Y2
	VMULPD       Y2, Y0, Y0
	VMULPD       Y2, Y1, Y1
	VMOVUPD      Y0, (DI)
	VMOVUPD      Y1, 32(DI)
	JMP          pbrow

pdone:
	VZEROUPPER
	RET

// func blockDotsAVX(dst, x, y *blk, n int)
// dst[jj] = Σ_s x[s][jj]·y[s][jj], summed in s order from +0.
TEXT ·blockDotsAVX(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DX
	MOVQ   n+24(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	TESTQ  CX, CX
	JLE    ddone

dloop:
	VMOVUPD (SI), Y2
	VMULPD  (DX), Y2, Y2
	VADDPD  Y2, Y0, Y0
	VMOVUPD 32(SI), Y3
	VMULPD  32(DX), Y3, Y3
	VADDPD  Y3, Y1, Y1
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     dloop

ddone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func blockAddScaledAVX(y, a, x *blk, n int)
// y[s][jj] += a[jj]·x[s][jj] for s = 0..n-1.
TEXT ·blockAddScaledAVX(SB), NOSPLIT, $0-32
	MOVQ    y+0(FP), DI
	MOVQ    a+8(FP), DX
	MOVQ    x+16(FP), SI
	MOVQ    n+24(FP), CX
	VMOVUPD (DX), Y4
	VMOVUPD 32(DX), Y5
	TESTQ   CX, CX
	JLE     sdone

sloop:
	VMULPD  (SI), Y4, Y2
	VMOVUPD (DI), Y0
	VADDPD  Y2, Y0, Y0
	VMOVUPD Y0, (DI)
	VMULPD  32(SI), Y5, Y3
	VMOVUPD 32(DI), Y1
	VADDPD  Y3, Y1, Y1
	VMOVUPD Y1, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     sloop

sdone:
	VZEROUPPER
	RET

// func mulRowsAsm(y, x *float64, ptr *int, col *int32, val *float64, n int)
// mulBlockAVX for one column.
TEXT ·mulRowsAsm(SB), NOSPLIT, $0-48
	MULARGS
	TESTQ CX, CX
	JLE   rdone

rrow:
	MOVQ  (R8), R11
	MOVQ  8(R8), R12
	XORPS X0, X0
	CMPQ  R11, R12
	JGE   rstore

rloop:
	STERM(ADDSD)
	INCQ R11
	CMPQ R11, R12
	JL   rloop

rstore:
	MOVSD X0, (DI)
	ADDQ  $8, DI
	ADDQ  $8, R8
	DECQ  CX
	JNZ   rrow

rdone:
	RET

// ETERM subtracts val[k]·x[col[k]] of fixed-width slot k (k = 0..7) from
// X0, R9 and R10 pointing at the row's slots.
#define ETERM(k) \
	MOVLQSX k*4(R9), R13; \
	MOVSD   k*8(R10), X2; \
	MULSD   (SI)(R13*8), X2; \
	SUBSD   X2, X0

#define EROW \
	ETERM(0); ETERM(1); ETERM(2); ETERM(3); \
	ETERM(4); ETERM(5); ETERM(6); ETERM(7)

// func ellForwardAsm(x *float64, col *int32, val *float64, lo, hi int)
// For rows i = lo..hi-1 in order: x[i] -= val[s]·x[col[s]] for the 8
// slots s of row i (col and val point at row lo's slots).
TEXT ·ellForwardAsm(SB), NOSPLIT, $0-40
	ELLARGS
	MOVQ lo+24(FP), AX
	MOVQ hi+32(FP), CX
	CMPQ AX, CX
	JGE  efdone

efrow:
	MOVSD (SI)(AX*8), X0
	EROW
	MOVSD X0, (SI)(AX*8)
	ADDQ  $32, R9
	ADDQ  $64, R10
	INCQ  AX
	CMPQ  AX, CX
	JL    efrow

efdone:
	RET

// func ellBackwardAsm(x *float64, col *int32, val *float64, inv *float64, lo, hi int)
// For rows i = hi-1 down to lo: x[i] -= val[s]·x[col[s]] for the 8 slots
// s of row i, then x[i] *= inv[i] (col and val point at row hi-1's slots).
TEXT ·ellBackwardAsm(SB), NOSPLIT, $0-48
	ELLARGS
	MOVQ inv+24(FP), DX
	MOVQ lo+32(FP), BX
	MOVQ hi+40(FP), AX
	CMPQ BX, AX
	JGE  ebdone

ebrow:
	DECQ  AX
	MOVSD (SI)(AX*8), X0
	EROW
	MULSD (DX)(AX*8), X0
	MOVSD X0, (SI)(AX*8)
	SUBQ  $32, R9
	SUBQ  $64, R10
	CMPQ  AX, BX
	JG    ebrow

ebdone:
	RET
// func precondAsm(x *float64, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int)
// precondBlockAVX for one column.
TEXT ·precondAsm(SB), NOSPLIT, $0-56
	SUBARGS
	TESTQ CX, CX
	JLE   qdone

qfrow:
	MOVQ  (R8)(AX*8), R11
	MOVQ  (BX)(AX*8), R12
	MOVSD (SI)(AX*8), X0
	CMPQ  R11, R12
	JGE   qfstore

qfloop:
	STERM(SUBSD)
	INCQ R11
	CMPQ R11, R12
	JL   qfloop

qfstore:
	MOVSD X0, (SI)(AX*8)
	INCQ  AX
	CMPQ  AX, CX
	JL    qfrow

qbrow:
	DECQ  AX
	JL    qdone
	MOVQ  (BX)(AX*8), R11
	INCQ  R11
	MOVQ  8(R8)(AX*8), R12
	MOVSD (SI)(AX*8), X0
	CMPQ  R11, R12
	JGE   qbscale

qbloop:
	STERM(SUBSD)
	INCQ R11
	CMPQ R11, R12
	JL   qbloop

qbscale:
	MULSD (DX)(AX*8), X0
	MOVSD X0, (SI)(AX*8)
	JMP   qbrow

qdone:
	RET

// func blockAxpyDotsAVX(dst, w, a, v, u *blk, n int)
// For s = 0..n-1: w[s][jj] += a[jj]·v[s][jj], then dst[jj] = Σ_s
// w[s][jj]·u[s][jj] of the new w, summed in s order from +0 (u may be w):
// blockAddScaledAVX and blockDotsAVX in one pass.
TEXT ·blockAxpyDotsAVX(SB), NOSPLIT, $0-48
	MOVQ    dst+0(FP), R8
	MOVQ    w+8(FP), DI
	MOVQ    a+16(FP), AX
	MOVQ    v+24(FP), SI
	MOVQ    u+32(FP), DX
	MOVQ    n+40(FP), CX
	VMOVUPD (AX), Y4
	VMOVUPD 32(AX), Y5
	VXORPD  Y0, Y0, Y0
	VXORPD  Y1, Y1, Y1
	TESTQ   CX, CX
	JLE     bdone

bloop:
	VMULPD  (SI), Y4, Y2
	VADDPD  (DI), Y2, Y2
	VMOVUPD Y2, (DI)
	VMULPD  (DX), Y2, Y2
	VADDPD  Y2, Y0, Y0
	VMULPD  32(SI), Y5, Y3
	VADDPD  32(DI), Y3, Y3
	VMOVUPD Y3, 32(DI)
	VMULPD  32(DX), Y3, Y3
	VADDPD  Y3, Y1, Y1
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     bloop

bdone:
	VMOVUPD Y0, (R8)
	VMOVUPD Y1, 32(R8)
	VZEROUPPER
	RET
