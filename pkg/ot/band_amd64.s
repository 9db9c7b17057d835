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
