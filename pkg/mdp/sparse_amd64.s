#include "textflag.h"

// The single-vector kernels of sparse.go in scalar SSE2 arithmetic: each
// row's sum in the same order, with the same separately rounded products
// and sums as the Go loops, so the results are the same bit for bit.

// func mulRowsAsm(y, x *float64, ptr *int, col *int32, val *float64, n int)
// For rows i = 0..n-1: y[i] = Σ_{k=ptr[i]}^{ptr[i+1]-1} val[k]·x[col[k]],
// summed in k order from +0.
TEXT ·mulRowsAsm(SB), NOSPLIT, $0-48
	MOVQ  y+0(FP), DI
	MOVQ  x+8(FP), SI
	MOVQ  ptr+16(FP), R8
	MOVQ  col+24(FP), R9
	MOVQ  val+32(FP), R10
	MOVQ  n+40(FP), CX
	TESTQ CX, CX
	JLE   sdone

srow:
	MOVQ  (R8), R11
	MOVQ  8(R8), R12
	XORPS X0, X0
	CMPQ  R11, R12
	JGE   sstore

sloop:
	MOVLQSX (R9)(R11*4), R13
	MOVSD   (R10)(R11*8), X2
	MULSD   (SI)(R13*8), X2
	ADDSD   X2, X0
	INCQ    R11
	CMPQ    R11, R12
	JL      sloop

sstore:
	MOVSD X0, (DI)
	ADDQ  $8, DI
	ADDQ  $8, R8
	DECQ  CX
	JNZ   srow

sdone:
	RET

// func precondAsm(x *float64, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int)
// precondBlockAVX for one column.
TEXT ·precondAsm(SB), NOSPLIT, $0-56
	MOVQ  x+0(FP), SI
	MOVQ  lu+8(FP), R10
	MOVQ  col+16(FP), R9
	MOVQ  ptr+24(FP), R8
	MOVQ  diag+32(FP), BX
	MOVQ  inv+40(FP), DX
	MOVQ  n+48(FP), CX
	TESTQ CX, CX
	JLE   qdone
	XORQ  AX, AX

qfrow:
	MOVQ  (R8)(AX*8), R11
	MOVQ  (BX)(AX*8), R12
	MOVSD (SI)(AX*8), X0
	CMPQ  R11, R12
	JGE   qfstore

qfloop:
	MOVLQSX (R9)(R11*4), R13
	MOVSD   (R10)(R11*8), X2
	MULSD   (SI)(R13*8), X2
	SUBSD   X2, X0
	INCQ    R11
	CMPQ    R11, R12
	JL      qfloop

qfstore:
	MOVSD X0, (SI)(AX*8)
	INCQ  AX
	CMPQ  AX, CX
	JL    qfrow
	MOVQ  CX, AX

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
	MOVLQSX (R9)(R11*4), R13
	MOVSD   (R10)(R11*8), X2
	MULSD   (SI)(R13*8), X2
	SUBSD   X2, X0
	INCQ    R11
	CMPQ    R11, R12
	JL      qbloop

qbscale:
	MULSD (DX)(AX*8), X0
	MOVSD X0, (SI)(AX*8)
	JMP   qbrow

qdone:
	RET
