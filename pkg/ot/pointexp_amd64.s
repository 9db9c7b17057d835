#include "textflag.h"

// Offsets of the pexTab constants (64 bytes each); keep in step with px* in pointexp.go.
#define LOG2E 0(R12)
#define LN2HI 64(R12)
#define LN2LO 128(R12)
#define ONE 192(R12)
#define MAGIC 256(R12)
#define UNDER 320(R12)
#define MINNORM 384(R12)
#define NEGINF 448(R12)
#define C2 512(R12)
#define C3 576(R12)
#define C4 640(R12)
#define C5 704(R12)
#define C6 768(R12)
#define C7 832(R12)
#define C8 896(R12)
#define C9 960(R12)
#define C10 1024(R12)
#define C11 1088(R12)
#define C12 1152(R12)
#define C13 1216(R12)

// EXP4 sets m = exp(x) lane by lane (AVX2+FMA), 0 where x < expUnderflow,
// where the result is below the normal range and where x is NaN; x is kept,
// k, p, r, a, b and c are scratch. The operations are those of pointExpRef
// in pointexp_test.go: x·log₂e rounded to an integer kd by adding 1.5·2^52
// in one FMA, the reduced argument ρ = x − kd·ln2Hi − kd·ln2Lo in p, and
// 2^kd·(1 + ρ·(1 + ρ·Q(ρ))), Q of degree 11 in pieces for a short
// dependency chain: (c2 + c3ρ + (c4 + c5ρ)ρ²) + ρ⁴·(s1 + ρ⁴·s2), s1 and s2
// by Horner.
#define EXP4(x, k, p, r, a, b, c, m) \
	VMOVUPD MAGIC, k; \
	VFMADD231PD LOG2E, x, k; \
	VSUBPD MAGIC, k, r; \
	VMOVAPD x, p; \
	VFNMADD231PD LN2HI, r, p; \
	VFNMADD231PD LN2LO, r, p; \
	VMULPD p, p, a; \
	VMULPD a, a, b; \
	VMOVUPD C3, r; \
	VFMADD213PD C2, p, r; \
	VMOVUPD C5, c; \
	VFMADD213PD C4, p, c; \
	VFMADD231PD c, a, r; \
	VMOVUPD C9, c; \
	VFMADD213PD C8, p, c; \
	VFMADD213PD C7, p, c; \
	VFMADD213PD C6, p, c; \
	VMOVUPD C13, m; \
	VFMADD213PD C12, p, m; \
	VFMADD213PD C11, p, m; \
	VFMADD213PD C10, p, m; \
	VFMADD213PD c, b, m; \
	VFMADD213PD r, b, m; \
	VFMADD213PD ONE, p, m; \
	VFMADD213PD ONE, p, m; \
	VPSUBQ MAGIC, k, k; \
	VPSLLQ $52, k, k; \
	VPADDQ k, m, m; \
	VCMPPD $0x1d, MINNORM, m, a; \
	VANDPD a, m, m; \
	VCMPPD $0x1d, UNDER, x, a; \
	VANDPD a, m, m

// EXP8 is EXP4 with AVX-512F (mask K1 is scratch too): the same operations.
#define EXP8(x, k, p, r, a, b, c, m) \
	VMOVUPD MAGIC, k; \
	VFMADD231PD LOG2E, x, k; \
	VSUBPD MAGIC, k, r; \
	VMOVAPD x, p; \
	VFNMADD231PD LN2HI, r, p; \
	VFNMADD231PD LN2LO, r, p; \
	VMULPD p, p, a; \
	VMULPD a, a, b; \
	VMOVUPD C3, r; \
	VFMADD213PD C2, p, r; \
	VMOVUPD C5, c; \
	VFMADD213PD C4, p, c; \
	VFMADD231PD c, a, r; \
	VMOVUPD C9, c; \
	VFMADD213PD C8, p, c; \
	VFMADD213PD C7, p, c; \
	VFMADD213PD C6, p, c; \
	VMOVUPD C13, m; \
	VFMADD213PD C12, p, m; \
	VFMADD213PD C11, p, m; \
	VFMADD213PD C10, p, m; \
	VFMADD213PD c, b, m; \
	VFMADD213PD r, b, m; \
	VFMADD213PD ONE, p, m; \
	VFMADD213PD ONE, p, m; \
	VPSUBQ MAGIC, k, k; \
	VPSLLQ $52, k, k; \
	VPADDQ k, m, m; \
	VCMPPD $0x1d, UNDER, x, K1; \
	VCMPPD $0x1d, MINNORM, m, K1, K1; \
	VMOVAPD.Z m, K1, m

// COSTS4 sets Y4…Y7 to the costs of the 16 columns at AX (coordinate rows
// R8 bytes apart) from the point at R10 with weights R11, R9 coordinates:
// c = Σ_k (w_k·t)·t, t = x_jk − x_ik, in sqDist's order and roundings.
#define COSTS4(lbl) \
	MOVQ         SI, AX; \
	ADDQ         BX, AX; \
	VXORPD       Y4, Y4, Y4; \
	VXORPD       Y5, Y5, Y5; \
	VXORPD       Y6, Y6, Y6; \
	VXORPD       Y7, Y7, Y7; \
	XORQ         CX, CX; \
lbl: \
	VBROADCASTSD (R10)(CX*8), Y8; \
	VBROADCASTSD (R11)(CX*8), Y9; \
	VMOVUPD      (AX), Y10; \
	VSUBPD       Y8, Y10, Y10; \
	VMULPD       Y9, Y10, Y11; \
	VMULPD       Y10, Y11, Y11; \
	VADDPD       Y11, Y4, Y4; \
	VMOVUPD      32(AX), Y12; \
	VSUBPD       Y8, Y12, Y12; \
	VMULPD       Y9, Y12, Y13; \
	VMULPD       Y12, Y13, Y13; \
	VADDPD       Y13, Y5, Y5; \
	VMOVUPD      64(AX), Y14; \
	VSUBPD       Y8, Y14, Y14; \
	VMULPD       Y9, Y14, Y15; \
	VMULPD       Y14, Y15, Y15; \
	VADDPD       Y15, Y6, Y6; \
	VMOVUPD      96(AX), Y10; \
	VSUBPD       Y8, Y10, Y10; \
	VMULPD       Y9, Y10, Y11; \
	VMULPD       Y10, Y11, Y11; \
	VADDPD       Y11, Y7, Y7; \
	ADDQ         R8, AX; \
	INCQ         CX; \
	CMPQ         CX, R9; \
	JLT          lbl

// COSTS8 is COSTS4 with AVX-512F: the costs in Z4 (columns 0-7) and Z5.
#define COSTS8(lbl) \
	MOVQ         SI, AX; \
	ADDQ         BX, AX; \
	VXORPD       Z4, Z4, Z4; \
	VXORPD       Z5, Z5, Z5; \
	XORQ         CX, CX; \
lbl: \
	VBROADCASTSD (R10)(CX*8), Z8; \
	VBROADCASTSD (R11)(CX*8), Z9; \
	VMOVUPD      (AX), Z10; \
	VSUBPD       Z8, Z10, Z10; \
	VMULPD       Z9, Z10, Z11; \
	VMULPD       Z10, Z11, Z11; \
	VADDPD       Z11, Z4, Z4; \
	VMOVUPD      64(AX), Z12; \
	VSUBPD       Z8, Z12, Z12; \
	VMULPD       Z9, Z12, Z13; \
	VMULPD       Z12, Z13, Z13; \
	VADDPD       Z13, Z5, Z5; \
	ADDQ         R8, AX; \
	INCQ         CX; \
	CMPQ         CX, R9; \
	JLT          lbl

// func pointExp4(dst, x *float64, n int, tab *float64)
// dst[i] = EXP4(x[i]) for i < n, n a multiple of 4 (tests).
TEXT ·pointExp4(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ tab+24(FP), R12
	SHRQ $2, CX
	JZ   edone

eloop:
	VMOVUPD (SI), Y0
	EXP4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVUPD Y7, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     eloop

edone:
	VZEROUPPER
	RET

// func pointMul4(lanes, xt *float64, m16, d int, xi, w, v *float64, nieps float64, cost bool, tab *float64)
// For the point xi (d coordinates, weights w) and a tile of m16 columns (a
// multiple of 16) whose coordinates are xt's d rows of m16, and v the tile's
// values: lanes[j mod 16] += K_j·v_j, K_j = exp(c_j·nieps) (nieps = −1/ε),
// times c_j if cost, flushed below the normal range.
TEXT ·pointMul4(SB), NOSPLIT, $0-80
	MOVQ    lanes+0(FP), DI
	MOVQ    xt+8(FP), SI
	MOVQ    m16+16(FP), R8
	SHLQ    $3, R8
	MOVQ    d+24(FP), R9
	MOVQ    xi+32(FP), R10
	MOVQ    w+40(FP), R11
	MOVQ    v+48(FP), DX
	MOVBQZX cost+64(FP), R13
	MOVQ    tab+72(FP), R12
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	XORQ    BX, BX

mblock:
	CMPQ BX, R8
	JGE  mdone
	COSTS4(mk)
	TESTQ        R13, R13
	JNZ          mcost
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y4, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VFMADD231PD  (DX)(BX*1), Y15, Y0
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y5, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VFMADD231PD  32(DX)(BX*1), Y15, Y1
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y6, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VFMADD231PD  64(DX)(BX*1), Y15, Y2
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y7, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VFMADD231PD  96(DX)(BX*1), Y15, Y3
	ADDQ         $128, BX
	JMP          mblock

mcost:
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y4, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VMULPD       Y4, Y15, Y15
	VCMPPD       $0x1d, MINNORM, Y15, Y10
	VANDPD       Y10, Y15, Y15
	VFMADD231PD  (DX)(BX*1), Y15, Y0
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y5, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VMULPD       Y5, Y15, Y15
	VCMPPD       $0x1d, MINNORM, Y15, Y10
	VANDPD       Y10, Y15, Y15
	VFMADD231PD  32(DX)(BX*1), Y15, Y1
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y6, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VMULPD       Y6, Y15, Y15
	VCMPPD       $0x1d, MINNORM, Y15, Y10
	VANDPD       Y10, Y15, Y15
	VFMADD231PD  64(DX)(BX*1), Y15, Y2
	VBROADCASTSD nieps+56(FP), Y9
	VMULPD       Y7, Y9, Y9
	EXP4(Y9, Y8, Y10, Y11, Y12, Y13, Y14, Y15)
	VMULPD       Y7, Y15, Y15
	VCMPPD       $0x1d, MINNORM, Y15, Y10
	VANDPD       Y10, Y15, Y15
	VFMADD231PD  96(DX)(BX*1), Y15, Y3
	ADDQ        $128, BX
	JMP         mblock

mdone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func pointMul8(lanes, xt *float64, m16, d int, xi, w, v *float64, nieps float64, cost bool, tab *float64)
// pointMul4 with AVX-512F: the same operations lane by lane.
TEXT ·pointMul8(SB), NOSPLIT, $0-80
	MOVQ    lanes+0(FP), DI
	MOVQ    xt+8(FP), SI
	MOVQ    m16+16(FP), R8
	SHLQ    $3, R8
	MOVQ    d+24(FP), R9
	MOVQ    xi+32(FP), R10
	MOVQ    w+40(FP), R11
	MOVQ    v+48(FP), DX
	MOVBQZX cost+64(FP), R13
	MOVQ    tab+72(FP), R12
	VMOVUPD (DI), Z0
	VMOVUPD 64(DI), Z1
	XORQ    BX, BX

zmblock:
	CMPQ BX, R8
	JGE  zmdone
	COSTS8(zmk)
	TESTQ        R13, R13
	JNZ          zmcost
	VBROADCASTSD nieps+56(FP), Z9
	VMULPD       Z4, Z9, Z9
	EXP8(Z9, Z8, Z10, Z11, Z12, Z13, Z14, Z15)
	VFMADD231PD  (DX)(BX*1), Z15, Z0
	VBROADCASTSD nieps+56(FP), Z9
	VMULPD       Z5, Z9, Z9
	EXP8(Z9, Z8, Z10, Z11, Z12, Z13, Z14, Z15)
	VFMADD231PD  64(DX)(BX*1), Z15, Z1
	ADDQ         $128, BX
	JMP          zmblock

zmcost:
	VBROADCASTSD nieps+56(FP), Z9
	VMULPD       Z4, Z9, Z9
	EXP8(Z9, Z8, Z10, Z11, Z12, Z13, Z14, Z15)
	VMULPD       Z4, Z15, Z15
	VCMPPD       $0x1d, MINNORM, Z15, K1
	VMOVAPD.Z    Z15, K1, Z15
	VFMADD231PD  (DX)(BX*1), Z15, Z0
	VBROADCASTSD nieps+56(FP), Z9
	VMULPD       Z5, Z9, Z9
	EXP8(Z9, Z8, Z10, Z11, Z12, Z13, Z14, Z15)
	VMULPD       Z5, Z15, Z15
	VCMPPD       $0x1d, MINNORM, Z15, K1
	VMOVAPD.Z    Z15, K1, Z15
	VFMADD231PD  64(DX)(BX*1), Z15, Z1
	ADDQ        $128, BX
	JMP         zmblock

zmdone:
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VZEROUPPER
	RET

// func pointLogE4(buf, xt *float64, m16, d int, xi, w, x *float64, nieps float64, tab *float64) float64
// For the point xi and a tile laid out as in pointMul4, with x the tile's
// log scalings: buf[j] = c_j·nieps + x_j; it returns max_j buf[j] (NaNs
// ignored, −Inf if none).
TEXT ·pointLogE4(SB), NOSPLIT, $0-80
	MOVQ    buf+0(FP), DI
	MOVQ    xt+8(FP), SI
	MOVQ    m16+16(FP), R8
	SHLQ    $3, R8
	MOVQ    d+24(FP), R9
	MOVQ    xi+32(FP), R10
	MOVQ    w+40(FP), R11
	MOVQ    x+48(FP), DX
	MOVQ    tab+64(FP), R12
	VMOVUPD NEGINF, Y0
	VMOVUPD NEGINF, Y1
	VMOVUPD NEGINF, Y2
	VMOVUPD NEGINF, Y3
	XORQ    BX, BX

lblock:
	CMPQ BX, R8
	JGE  ldone
	COSTS4(lk)
	VBROADCASTSD nieps+56(FP), Y8
	VMULPD       Y8, Y4, Y4
	VADDPD       (DX)(BX*1), Y4, Y4
	VMOVUPD      Y4, (DI)(BX*1)
	VMAXPD       Y0, Y4, Y0
	VMULPD       Y8, Y5, Y5
	VADDPD       32(DX)(BX*1), Y5, Y5
	VMOVUPD      Y5, 32(DI)(BX*1)
	VMAXPD       Y1, Y5, Y1
	VMULPD       Y8, Y6, Y6
	VADDPD       64(DX)(BX*1), Y6, Y6
	VMOVUPD      Y6, 64(DI)(BX*1)
	VMAXPD       Y2, Y6, Y2
	VMULPD       Y8, Y7, Y7
	VADDPD       96(DX)(BX*1), Y7, Y7
	VMOVUPD      Y7, 96(DI)(BX*1)
	VMAXPD       Y3, Y7, Y3
	ADDQ         $128, BX
	JMP          lblock

ldone:
	VMAXPD       Y1, Y0, Y0
	VMAXPD       Y2, Y0, Y0
	VMAXPD       Y3, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VMAXPD       X1, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+72(FP)
	RET

// func pointLogE8(buf, xt *float64, m16, d int, xi, w, x *float64, nieps float64, tab *float64) float64
// pointLogE4 with AVX-512F.
TEXT ·pointLogE8(SB), NOSPLIT, $0-80
	MOVQ    buf+0(FP), DI
	MOVQ    xt+8(FP), SI
	MOVQ    m16+16(FP), R8
	SHLQ    $3, R8
	MOVQ    d+24(FP), R9
	MOVQ    xi+32(FP), R10
	MOVQ    w+40(FP), R11
	MOVQ    x+48(FP), DX
	MOVQ    tab+64(FP), R12
	VMOVUPD NEGINF, Z0
	VMOVUPD NEGINF, Z1
	XORQ    BX, BX

zlblock:
	CMPQ BX, R8
	JGE  zldone
	COSTS8(zlk)
	VBROADCASTSD nieps+56(FP), Z8
	VMULPD       Z8, Z4, Z4
	VADDPD       (DX)(BX*1), Z4, Z4
	VMOVUPD      Z4, (DI)(BX*1)
	VMAXPD       Z0, Z4, Z0
	VMULPD       Z8, Z5, Z5
	VADDPD       64(DX)(BX*1), Z5, Z5
	VMOVUPD      Z5, 64(DI)(BX*1)
	VMAXPD       Z1, Z5, Z1
	ADDQ         $128, BX
	JMP          zlblock

zldone:
	VMAXPD        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPD        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPD        X1, X0, X0
	VPERMILPD     $1, X0, X1
	VMAXPD        X1, X0, X0
	VZEROUPPER
	MOVSD         X0, ret+72(FP)
	RET

// func pointLogSum4(lanes, buf *float64, m16 int, m float64, tab *float64)
// lanes[j mod 16] += EXP4(buf[j] − m) for j < m16.
TEXT ·pointLogSum4(SB), NOSPLIT, $0-40
	MOVQ         lanes+0(FP), DI
	MOVQ         buf+8(FP), SI
	MOVQ         m16+16(FP), R8
	SHLQ         $3, R8
	VBROADCASTSD m+24(FP), Y8
	MOVQ         tab+32(FP), R12
	VMOVUPD      (DI), Y0
	VMOVUPD      32(DI), Y1
	VMOVUPD      64(DI), Y2
	VMOVUPD      96(DI), Y3
	XORQ         BX, BX

sblock:
	CMPQ    BX, R8
	JGE     sdone
	VMOVUPD (SI)(BX*1), Y9
	VSUBPD  Y8, Y9, Y9
	EXP4(Y9, Y4, Y5, Y6, Y7, Y10, Y11, Y12)
	VADDPD  Y12, Y0, Y0
	VMOVUPD 32(SI)(BX*1), Y9
	VSUBPD  Y8, Y9, Y9
	EXP4(Y9, Y4, Y5, Y6, Y7, Y10, Y11, Y12)
	VADDPD  Y12, Y1, Y1
	VMOVUPD 64(SI)(BX*1), Y9
	VSUBPD  Y8, Y9, Y9
	EXP4(Y9, Y4, Y5, Y6, Y7, Y10, Y11, Y12)
	VADDPD  Y12, Y2, Y2
	VMOVUPD 96(SI)(BX*1), Y9
	VSUBPD  Y8, Y9, Y9
	EXP4(Y9, Y4, Y5, Y6, Y7, Y10, Y11, Y12)
	VADDPD  Y12, Y3, Y3
	ADDQ    $128, BX
	JMP     sblock

sdone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func pointLogSum8(lanes, buf *float64, m16 int, m float64, tab *float64)
// pointLogSum4 with AVX-512F.
TEXT ·pointLogSum8(SB), NOSPLIT, $0-40
	MOVQ         lanes+0(FP), DI
	MOVQ         buf+8(FP), SI
	MOVQ         m16+16(FP), R8
	SHLQ         $3, R8
	VBROADCASTSD m+24(FP), Z8
	MOVQ         tab+32(FP), R12
	VMOVUPD      (DI), Z0
	VMOVUPD      64(DI), Z1
	XORQ         BX, BX

zsblock:
	CMPQ    BX, R8
	JGE     zsdone
	VMOVUPD (SI)(BX*1), Z9
	VSUBPD  Z8, Z9, Z9
	EXP8(Z9, Z4, Z5, Z6, Z7, Z10, Z11, Z12)
	VADDPD  Z12, Z0, Z0
	VMOVUPD 64(SI)(BX*1), Z13
	VSUBPD  Z8, Z13, Z13
	EXP8(Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20)
	VADDPD  Z20, Z1, Z1
	ADDQ    $128, BX
	JMP     zsblock

zsdone:
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VZEROUPPER
	RET
