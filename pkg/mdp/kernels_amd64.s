#include "textflag.h"
#include "blockkernels_amd64.h"

// The Krylov kernels of block.go, sparse.go and ell.go: AVX for blocks of 8
// columns (one block in two Y registers), scalar SSE2 for single vectors.
// No fused multiply-add: each lane performs the same IEEE operations in
// the same order as the Go loop it replaces (whose products are rounded by
// an explicit float64 conversion, which forbids the compiler to fuse them
// under any GOAMD64), so the results are the same bit for bit. The
// product, the substitutions and the scaled sum of blocks are the bodies
// of blockkernels_amd64.h, shared with the float32 kernels.
//
// Registers shared by the row loops: SI = x, R9 = col, R10 = values,
// R11 = k (the entry), R12 = the row's end, R13 = scratch; the row's
// accumulator is Y0:Y1 (blocks) or X0 (single vectors).

// STERM adds (OP = ADDSD) or subtracts (SUBSD) values[k]·x[col[k]] to or
// from a single vector's accumulator X0.
#define STERM(OP) \
	MOVLQSX (R9)(R11*4), R13; \
	MOVSD   (R10)(R11*8), X2; \
	MULSD   (SI)(R13*8), X2; \
	OP      X2, X0

// ELLARGS loads the arguments x, col and val of ellForwardAsm and
// ellBackwardAsm.
#define ELLARGS \
	MOVQ x+0(FP), SI; \
	MOVQ col+8(FP), R9; \
	MOVQ val+16(FP), R10

// func mulBlockAVX(y, x *blk, ptr *int, col *int32, val *float64, n int)
TEXT ·mulBlockAVX(SB), NOSPLIT, $0-48
	MULBLOCK(VMOVUPD, VBROADCASTSD, VMULPD, VADDPD, VXORPD, 8)

// func precondBlockAVX(x *blk, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int)
TEXT ·precondBlockAVX(SB), NOSPLIT, $0-56
	PRECONDBLOCK(VMOVUPD, VBROADCASTSD, VMULPD, VSUBPD, 8)

// func blockDotsAVX(dst, x, y *blk, n int)
// dst[jj] = Σ_s x[s][jj]·y[s][jj], summed in s order from +0.
TEXT ·blockDotsAVX(SB), NOSPLIT, $0-32
	DOTSARGS
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
	ADDSCALEDBLOCK(VMOVUPD, VMULPD, VADDPD)

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
	AXPYDOTSARGS
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
