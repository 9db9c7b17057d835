#include "textflag.h"

// func fmaBand32(out *float64, src *float64, stride int, coef *float64, ncoef int, nblk int)
// For b in [0, nblk): out[32b : 32b+32] = Σ_{j<ncoef} coef[j] · src[j·stride + 32b : +32].
// Eight YMM accumulators stay in registers across the band.
TEXT ·fmaBand32(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	SHLQ $3, DX
	MOVQ coef+24(FP), R8
	MOVQ ncoef+32(FP), R9
	MOVQ nblk+40(FP), R10

blk:
	TESTQ R10, R10
	JZ    done
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	MOVQ   SI, R11
	MOVQ   R8, R12
	MOVQ   R9, CX

inner:
	TESTQ        CX, CX
	JZ           store
	VBROADCASTSD (R12), Y4
	VFMADD231PD  (R11), Y4, Y0
	VFMADD231PD  32(R11), Y4, Y1
	VFMADD231PD  64(R11), Y4, Y2
	VFMADD231PD  96(R11), Y4, Y3
	VFMADD231PD  128(R11), Y4, Y5
	VFMADD231PD  160(R11), Y4, Y6
	VFMADD231PD  192(R11), Y4, Y7
	VFMADD231PD  224(R11), Y4, Y8
	ADDQ         $8, R12
	ADDQ         DX, R11
	DECQ         CX
	JMP          inner

store:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y5, 128(DI)
	VMOVUPD Y6, 160(DI)
	VMOVUPD Y7, 192(DI)
	VMOVUPD Y8, 224(DI)
	ADDQ    $256, DI
	ADDQ    $256, SI
	DECQ    R10
	JMP     blk

done:
	VZEROUPPER
	RET

// func fmaBand16(out *float64, src *float64, stride int, coef *float64, ncoef int)
// out[0:16] = Σ_{j<ncoef} coef[j] · src[j·stride : j·stride+16]; two chains of
// partial sums per column group (even and odd j) for more independent FMAs.
TEXT ·fmaBand16(SB), NOSPLIT, $0-40
	MOVQ   out+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   stride+16(FP), DX
	SHLQ   $3, DX
	MOVQ   coef+24(FP), R8
	MOVQ   ncoef+32(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8

loop16:
	CMPQ         CX, $2
	JLT          last16
	VBROADCASTSD (R8), Y4
	VBROADCASTSD 8(R8), Y9
	VFMADD231PD  (SI), Y4, Y0
	VFMADD231PD  32(SI), Y4, Y1
	VFMADD231PD  64(SI), Y4, Y2
	VFMADD231PD  96(SI), Y4, Y3
	ADDQ         DX, SI
	VFMADD231PD  (SI), Y9, Y5
	VFMADD231PD  32(SI), Y9, Y6
	VFMADD231PD  64(SI), Y9, Y7
	VFMADD231PD  96(SI), Y9, Y8
	ADDQ         DX, SI
	ADDQ         $16, R8
	SUBQ         $2, CX
	JMP          loop16

last16:
	TESTQ        CX, CX
	JZ           sum16
	VBROADCASTSD (R8), Y4
	VFMADD231PD  (SI), Y4, Y0
	VFMADD231PD  32(SI), Y4, Y1
	VFMADD231PD  64(SI), Y4, Y2
	VFMADD231PD  96(SI), Y4, Y3

sum16:
	VADDPD  Y5, Y0, Y0
	VADDPD  Y6, Y1, Y1
	VADDPD  Y7, Y2, Y2
	VADDPD  Y8, Y3, Y3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func fmaBand4(out *float64, src *float64, stride int, coef *float64, ncoef int, nvec int)
// For v in [0, nvec) (nvec ≤ 3): out[4v : 4v+4] = Σ_j coef[j] · src[j·stride + 4v : +4],
// with even and odd j in separate chains.
TEXT ·fmaBand4(SB), NOSPLIT, $0-48
	MOVQ   out+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   stride+16(FP), DX
	SHLQ   $3, DX
	MOVQ   coef+24(FP), R8
	MOVQ   ncoef+32(FP), CX
	MOVQ   nvec+40(FP), R10
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

loop4:
	CMPQ         CX, $2
	JLT          last4
	VBROADCASTSD (R8), Y4
	VBROADCASTSD 8(R8), Y9
	VFMADD231PD  (SI), Y4, Y0
	VFMADD231PD  32(SI), Y4, Y1
	VFMADD231PD  64(SI), Y4, Y2
	ADDQ         DX, SI
	VFMADD231PD  (SI), Y9, Y5
	VFMADD231PD  32(SI), Y9, Y6
	VFMADD231PD  64(SI), Y9, Y7
	ADDQ         DX, SI
	ADDQ         $16, R8
	SUBQ         $2, CX
	JMP          loop4

last4:
	TESTQ        CX, CX
	JZ           sum4
	VBROADCASTSD (R8), Y4
	VFMADD231PD  (SI), Y4, Y0
	VFMADD231PD  32(SI), Y4, Y1
	VFMADD231PD  64(SI), Y4, Y2

sum4:
	VADDPD  Y5, Y0, Y0
	VADDPD  Y6, Y1, Y1
	VADDPD  Y7, Y2, Y2
	VMOVUPD Y0, (DI)
	CMPQ    R10, $2
	JLT     done4
	VMOVUPD Y1, 32(DI)
	CMPQ    R10, $3
	JLT     done4
	VMOVUPD Y2, 64(DI)

done4:
	VZEROUPPER
	RET

// func fmaBand64(out *float64, src *float64, stride int, coef *float64, ncoef int, nblk int)
// fmaBand32 with AVX-512: for b in [0, nblk), out[64b : 64b+64] =
// Σ_{j<ncoef} coef[j] · src[j·stride + 64b : +64], eight ZMM accumulators.
// Each column's sum is the same chain of FMAs over j in order as fmaBand32's,
// so the two give identical results.
TEXT ·fmaBand64(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	SHLQ $3, DX
	MOVQ coef+24(FP), R8
	MOVQ ncoef+32(FP), R9
	MOVQ nblk+40(FP), R10

zblk:
	TESTQ  R10, R10
	JZ     zdone
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	VXORPD Z2, Z2, Z2
	VXORPD Z3, Z3, Z3
	VXORPD Z5, Z5, Z5
	VXORPD Z6, Z6, Z6
	VXORPD Z7, Z7, Z7
	VXORPD Z8, Z8, Z8
	MOVQ   SI, R11
	MOVQ   R8, R12
	MOVQ   R9, CX

zinner:
	TESTQ        CX, CX
	JZ           zstore
	VBROADCASTSD (R12), Z4
	VFMADD231PD  (R11), Z4, Z0
	VFMADD231PD  64(R11), Z4, Z1
	VFMADD231PD  128(R11), Z4, Z2
	VFMADD231PD  192(R11), Z4, Z3
	VFMADD231PD  256(R11), Z4, Z5
	VFMADD231PD  320(R11), Z4, Z6
	VFMADD231PD  384(R11), Z4, Z7
	VFMADD231PD  448(R11), Z4, Z8
	ADDQ         $8, R12
	ADDQ         DX, R11
	DECQ         CX
	JMP          zinner

zstore:
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VMOVUPD Z5, 256(DI)
	VMOVUPD Z6, 320(DI)
	VMOVUPD Z7, 384(DI)
	VMOVUPD Z8, 448(DI)
	ADDQ    $512, DI
	ADDQ    $512, SI
	DECQ    R10
	JMP     zblk

zdone:
	VZEROUPPER
	RET
