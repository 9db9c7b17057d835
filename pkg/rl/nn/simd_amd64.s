#include "textflag.h"

// Kernels that use AVX but no fused multiply-add, so that they round exactly
// as the plain Go loops they replace (Go does not fuse on GOAMD64=v1): each
// lane performs the same IEEE operations in the same order.

// func axpyRows(k int, a *float64, acs int, b *float64, ldb int, c *float64, n int)
// For l = 0..k-1 in order: c[0:n] += a[l*acs] * b[l*ldb : l*ldb+n], with a
// rounded product and a rounded sum; n is a multiple of 4, k ≥ 1.
TEXT ·axpyRows(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ acs+16(FP), R8
	SHLQ $3, R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	SHLQ $3, R9
	MOVQ c+40(FP), DX
	MOVQ n+48(FP), BX

loop32:
	CMPQ    BX, $32
	JL      loop4
	VMOVUPD (DX), Y0
	VMOVUPD 32(DX), Y1
	VMOVUPD 64(DX), Y2
	VMOVUPD 96(DX), Y3
	VMOVUPD 128(DX), Y4
	VMOVUPD 160(DX), Y5
	VMOVUPD 192(DX), Y6
	VMOVUPD 224(DX), Y7
	MOVQ    SI, R10
	MOVQ    DI, R11
	MOVQ    CX, R12

inner32:
	VBROADCASTSD (R10), Y8
	VMULPD       (R11), Y8, Y9
	VADDPD       Y9, Y0, Y0
	VMULPD       32(R11), Y8, Y10
	VADDPD       Y10, Y1, Y1
	VMULPD       64(R11), Y8, Y11
	VADDPD       Y11, Y2, Y2
	VMULPD       96(R11), Y8, Y12
	VADDPD       Y12, Y3, Y3
	VMULPD       128(R11), Y8, Y9
	VADDPD       Y9, Y4, Y4
	VMULPD       160(R11), Y8, Y10
	VADDPD       Y10, Y5, Y5
	VMULPD       192(R11), Y8, Y11
	VADDPD       Y11, Y6, Y6
	VMULPD       224(R11), Y8, Y12
	VADDPD       Y12, Y7, Y7
	ADDQ         R8, R10
	ADDQ         R9, R11
	DECQ         R12
	JNZ          inner32
	VMOVUPD      Y0, (DX)
	VMOVUPD      Y1, 32(DX)
	VMOVUPD      Y2, 64(DX)
	VMOVUPD      Y3, 96(DX)
	VMOVUPD      Y4, 128(DX)
	VMOVUPD      Y5, 160(DX)
	VMOVUPD      Y6, 192(DX)
	VMOVUPD      Y7, 224(DX)
	ADDQ         $256, DX
	ADDQ         $256, DI
	SUBQ         $32, BX
	JMP          loop32

loop4:
	CMPQ    BX, $4
	JL      done
	VMOVUPD (DX), Y0
	MOVQ    SI, R10
	MOVQ    DI, R11
	MOVQ    CX, R12

inner4:
	VBROADCASTSD (R10), Y8
	VMULPD       (R11), Y8, Y9
	VADDPD       Y9, Y0, Y0
	ADDQ         R8, R10
	ADDQ         R9, R11
	DECQ         R12
	JNZ          inner4
	VMOVUPD      Y0, (DX)
	ADDQ         $32, DX
	ADDQ         $32, DI
	SUBQ         $4, BX
	JMP          loop4

done:
	VZEROUPPER
	RET

// func adamStep(n int, p, grad, m, v *float64, k *[7]float64)
// For i < n (a multiple of 4), with k = {b1, 1-b1, b2, 1-b2, step, sq, eps}:
//   m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g; p -= (step*m) / (sqrt(v)/sq + eps).
TEXT ·adamStep(SB), NOSPLIT, $0-48
	MOVQ         n+0(FP), CX
	MOVQ         p+8(FP), DI
	MOVQ         grad+16(FP), SI
	MOVQ         m+24(FP), R8
	MOVQ         v+32(FP), R9
	MOVQ         k+40(FP), AX
	VBROADCASTSD 0(AX), Y10
	VBROADCASTSD 8(AX), Y11
	VBROADCASTSD 16(AX), Y12
	VBROADCASTSD 24(AX), Y13
	VBROADCASTSD 32(AX), Y14
	VBROADCASTSD 40(AX), Y15
	VBROADCASTSD 48(AX), Y9
	SHRQ         $2, CX
	JZ           adone

aloop:
	VMOVUPD (SI), Y0
	VMULPD  (R8), Y10, Y1
	VMULPD  Y0, Y11, Y2
	VADDPD  Y2, Y1, Y1
	VMOVUPD Y1, (R8)
	VMULPD  (R9), Y12, Y3
	VMULPD  Y0, Y13, Y4
	VMULPD  Y0, Y4, Y4
	VADDPD  Y4, Y3, Y3
	VMOVUPD Y3, (R9)
	VSQRTPD Y3, Y3
	VDIVPD  Y15, Y3, Y3
	VADDPD  Y9, Y3, Y3
	VMULPD  Y1, Y14, Y1
	VDIVPD  Y3, Y1, Y1
	VMOVUPD (DI), Y5
	VSUBPD  Y1, Y5, Y5
	VMOVUPD Y5, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     aloop

adone:
	VZEROUPPER
	RET

// func tanhGrad(n int, d, y *float64)
// For i < n (a multiple of 4): d[i] *= 1 - y[i]*y[i], rounding each operation.
TEXT ·tanhGrad(SB), NOSPLIT, $0-24
	MOVQ         n+0(FP), CX
	MOVQ         d+8(FP), DI
	MOVQ         y+16(FP), SI
	MOVQ         $0x3ff0000000000000, AX
	MOVQ         AX, X15
	VBROADCASTSD X15, Y15
	SHRQ         $2, CX
	JZ           tdone

tloop:
	VMOVUPD (SI), Y0
	VMULPD  Y0, Y0, Y0
	VSUBPD  Y0, Y15, Y0
	VMULPD  (DI), Y0, Y0
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     tloop

tdone:
	VZEROUPPER
	RET

// func dots4(k int, a0, a1, a2, a3, b0, b1, b2, b3 *float64, dst *[4]float64)
// dst[r] = Σ_l a_r[l]·b_r[l] summed exactly as gonum's f64.DotUnitary on
// amd64: four partial sums, element l going to sum l%4 (a rounded product
// added with a rounded sum), the last k%4 elements added in order to sum 0,
// then (s0+s2) + (s1+s3). Each 256-bit accumulator holds one dot's four sums.
TEXT ·dots4(SB), NOSPLIT, $0-80
	MOVQ   k+0(FP), CX
	MOVQ   a0+8(FP), R8
	MOVQ   a1+16(FP), R9
	MOVQ   a2+24(FP), R10
	MOVQ   a3+32(FP), R11
	MOVQ   b0+40(FP), R12
	MOVQ   b1+48(FP), R13
	MOVQ   b2+56(FP), R14
	MOVQ   b3+64(FP), BX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   SI, SI
	MOVQ   CX, DX
	SHRQ   $2, DX
	JZ     dtail

dloop:
	VMOVUPD (R8)(SI*8), Y4
	VMULPD  (R12)(SI*8), Y4, Y4
	VADDPD  Y4, Y0, Y0
	VMOVUPD (R9)(SI*8), Y5
	VMULPD  (R13)(SI*8), Y5, Y5
	VADDPD  Y5, Y1, Y1
	VMOVUPD (R10)(SI*8), Y6
	VMULPD  (R14)(SI*8), Y6, Y6
	VADDPD  Y6, Y2, Y2
	VMOVUPD (R11)(SI*8), Y7
	VMULPD  (BX)(SI*8), Y7, Y7
	VADDPD  Y7, Y3, Y3
	ADDQ    $4, SI
	DECQ    DX
	JNZ     dloop

dtail:
	ANDQ $3, CX
	JZ   dreduce

dtailloop:
	VMOVSD (R8)(SI*8), X4
	VMULSD (R12)(SI*8), X4, X4
	VADDSD X4, X0, X8
	VBLENDPD $1, Y8, Y0, Y0
	VMOVSD (R9)(SI*8), X5
	VMULSD (R13)(SI*8), X5, X5
	VADDSD X5, X1, X8
	VBLENDPD $1, Y8, Y1, Y1
	VMOVSD (R10)(SI*8), X6
	VMULSD (R14)(SI*8), X6, X6
	VADDSD X6, X2, X8
	VBLENDPD $1, Y8, Y2, Y2
	VMOVSD (R11)(SI*8), X7
	VMULSD (BX)(SI*8), X7, X7
	VADDSD X7, X3, X8
	VBLENDPD $1, Y8, Y3, Y3
	INCQ    SI
	DECQ    CX
	JNZ     dtailloop

dreduce:
	MOVQ         dst+72(FP), AX
	VEXTRACTF128 $1, Y0, X4
	VADDPD       X4, X0, X0
	VUNPCKHPD    X0, X0, X4
	VADDSD       X4, X0, X0
	VMOVSD       X0, 0(AX)
	VEXTRACTF128 $1, Y1, X4
	VADDPD       X4, X1, X1
	VUNPCKHPD    X1, X1, X4
	VADDSD       X4, X1, X1
	VMOVSD       X1, 8(AX)
	VEXTRACTF128 $1, Y2, X4
	VADDPD       X4, X2, X2
	VUNPCKHPD    X2, X2, X4
	VADDSD       X4, X2, X2
	VMOVSD       X2, 16(AX)
	VEXTRACTF128 $1, Y3, X4
	VADDPD       X4, X3, X3
	VUNPCKHPD    X3, X3, X4
	VADDSD       X4, X3, X3
	VMOVSD       X3, 24(AX)
	VZEROUPPER
	RET
