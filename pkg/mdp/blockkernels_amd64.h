// The block kernels shared by kernels_amd64.s (8 float64 columns) and
// kernels32_amd64.s (16 float32 columns): a block is 64 bytes per state,
// two Y registers, in either precision, so each kernel is one body over
// its instructions — MOVU (VMOVUPD or VMOVUPS), BCAST (VBROADCASTSD or
// VBROADCASTSS), MUL, ADD, SUB and XOR (…PD or …PS) — and VS, the byte
// size of a matrix value (8 or 4). No fused multiply-add: each lane
// performs its Go loop's IEEE operations in the same order.
//
// Registers of the row loops: SI = x, R9 = col, R10 = values, R11 = k
// (the entry), R12 = the row's end, R13 = scratch; the row's accumulator
// is Y0:Y1.

// BTERMX adds (OP = ADD) or subtracts (OP = SUB) values[k]·x[col[k]] to
// or from the block accumulator.
#define BTERMX(OP, BCAST, MUL, VS) \
	MOVLQSX (R9)(R11*4), R13; \
	SHLQ    $6, R13; \
	BCAST   (R10)(R11*VS), Y2; \
	MUL     (SI)(R13*1), Y2, Y3; \
	OP      Y3, Y0, Y0; \
	MUL     32(SI)(R13*1), Y2, Y4; \
	OP      Y4, Y1, Y1

// MULARGS loads the arguments y, x, ptr, col, val and n of a product
// (here and mulRowsAsm).
#define MULARGS \
	MOVQ y+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ ptr+16(FP), R8; \
	MOVQ col+24(FP), R9; \
	MOVQ val+32(FP), R10; \
	MOVQ n+40(FP), CX

// SUBARGS loads the arguments x, lu, col, ptr, diag, inv and n of the
// substitutions (here and precondAsm), and sets the row index AX to 0.
#define SUBARGS \
	MOVQ x+0(FP), SI; \
	MOVQ lu+8(FP), R10; \
	MOVQ col+16(FP), R9; \
	MOVQ ptr+24(FP), R8; \
	MOVQ diag+32(FP), BX; \
	MOVQ inv+40(FP), DX; \
	MOVQ n+48(FP), CX; \
	XORQ AX, AX

// DOTSARGS loads the arguments dst, x, y and n of the dot products.
#define DOTSARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ y+16(FP), DX; \
	MOVQ n+24(FP), CX

// AXPYDOTSARGS loads the arguments dst, w, a, v, u and n of the fused
// update and dot products.
#define AXPYDOTSARGS \
	MOVQ dst+0(FP), R8; \
	MOVQ w+8(FP), DI; \
	MOVQ a+16(FP), AX; \
	MOVQ v+24(FP), SI; \
	MOVQ u+32(FP), DX; \
	MOVQ n+40(FP), CX

// TERMS runs BTERMX over the row's entries k = R11..R12-1 (at least one),
// the loop at LOOP.
#define TERMS(LOOP, OP, BCAST, MUL, VS) \
LOOP: \
	BTERMX(OP, BCAST, MUL, VS); \
	INCQ R11; \
	CMPQ R11, R12; \
	JL   LOOP

// MULBLOCK is the body of func(y, x *block, ptr *int, col *int32, val
// *value, n int): for rows i = 0..n-1, y[i] = Σ_{k=ptr[i]}^{ptr[i+1]-1}
// val[k]·x[col[k]], summed in k order from +0.
#define MULBLOCK(MOVU, BCAST, MUL, ADD, XOR, VS) \
	MULARGS; \
	TESTQ CX, CX; \
	JLE   mdone; \
mrow: \
	MOVQ (R8), R11; \
	MOVQ 8(R8), R12; \
	XOR  Y0, Y0, Y0; \
	XOR  Y1, Y1, Y1; \
	CMPQ R11, R12; \
	JGE  mstore; \
	TERMS(mloop, ADD, BCAST, MUL, VS); \
mstore: \
	MOVU Y0, (DI); \
	MOVU Y1, 32(DI); \
	ADDQ $64, DI; \
	ADDQ $8, R8; \
	DECQ CX; \
	JNZ  mrow; \
mdone: \
	VZEROUPPER; \
	RET

// PRECONDBLOCK is the body of func(x *block, lu *value, col *int32, ptr
// *int, diag *int, inv *value, n int): forward, for i = 0..n-1, x[i] -=
// lu[k]·x[col[k]] for k = ptr[i]..diag[i]-1 in order; backward, for
// i = n-1..0, x[i] -= lu[k]·x[col[k]] for k = diag[i]+1..ptr[i+1]-1 in
// order, then x[i] *= inv[i].
#define PRECONDBLOCK(MOVU, BCAST, MUL, SUB, VS) \
	SUBARGS; \
	TESTQ CX, CX; \
	JLE   pdone; \
	MOVQ  SI, DI; \
pfrow: \
	MOVQ (R8)(AX*8), R11; \
	MOVQ (BX)(AX*8), R12; \
	MOVU (DI), Y0; \
	MOVU 32(DI), Y1; \
	CMPQ R11, R12; \
	JGE  pfstore; \
	TERMS(pfloop, SUB, BCAST, MUL, VS); \
pfstore: \
	MOVU Y0, (DI); \
	MOVU Y1, 32(DI); \
	ADDQ $64, DI; \
	INCQ AX; \
	CMPQ AX, CX; \
	JL   pfrow; \
pbrow: \
	DECQ AX; \
	JL   pdone; \
	MOVQ AX, DI; \
	SHLQ $6, DI; \
	ADDQ SI, DI; \
	MOVQ (BX)(AX*8), R11; \
	INCQ R11; \
	MOVQ 8(R8)(AX*8), R12; \
	MOVU (DI), Y0; \
	MOVU 32(DI), Y1; \
	CMPQ R11, R12; \
	JGE  pbscale; \
	TERMS(pbloop, SUB, BCAST, MUL, VS); \
pbscale: \
	BCAST (DX)(AX*VS), Y2; \
	MUL   Y2, Y0, Y0; \
	MUL   Y2, Y1, Y1; \
	MOVU  Y0, (DI); \
	MOVU  Y1, 32(DI); \
	JMP   pbrow; \
pdone: \
	VZEROUPPER; \
	RET

// ADDSCALEDBLOCK is the body of func(y, a, x *block, n int):
// y[s][jj] += a[jj]·x[s][jj] for s = 0..n-1.
#define ADDSCALEDBLOCK(MOVU, MUL, ADD) \
	MOVQ y+0(FP), DI; \
	MOVQ a+8(FP), DX; \
	MOVQ x+16(FP), SI; \
	MOVQ n+24(FP), CX; \
	MOVU (DX), Y4; \
	MOVU 32(DX), Y5; \
	TESTQ CX, CX; \
	JLE   sdone; \
sloop: \
	MUL  (SI), Y4, Y2; \
	MOVU (DI), Y0; \
	ADD  Y2, Y0, Y0; \
	MOVU Y0, (DI); \
	MUL  32(SI), Y5, Y3; \
	MOVU 32(DI), Y1; \
	ADD  Y3, Y1, Y1; \
	MOVU Y1, 32(DI); \
	ADDQ $64, SI; \
	ADDQ $64, DI; \
	DECQ CX; \
	JNZ  sloop; \
sdone: \
	VZEROUPPER; \
	RET
