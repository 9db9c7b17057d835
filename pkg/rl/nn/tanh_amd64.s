#include "textflag.h"

// Constants, each replicated in the four lanes of a 256-bit vector.
// Bit patterns: 20, -20, log2(e), ln2 split in hi+lo, 1/n! for n = 13..0, 1, the exponent bias 1023, 17/315, 2/15, 1/3, the abs mask and 0.02.
DATA tc<>+0(SB)/8, $0x4034000000000000
DATA tc<>+8(SB)/8, $0x4034000000000000
DATA tc<>+16(SB)/8, $0x4034000000000000
DATA tc<>+24(SB)/8, $0x4034000000000000
DATA tc<>+32(SB)/8, $0xc034000000000000
DATA tc<>+40(SB)/8, $0xc034000000000000
DATA tc<>+48(SB)/8, $0xc034000000000000
DATA tc<>+56(SB)/8, $0xc034000000000000
DATA tc<>+64(SB)/8, $0x3ff71547652b82fe
DATA tc<>+72(SB)/8, $0x3ff71547652b82fe
DATA tc<>+80(SB)/8, $0x3ff71547652b82fe
DATA tc<>+88(SB)/8, $0x3ff71547652b82fe
DATA tc<>+96(SB)/8, $0x3fe62e42fee00000
DATA tc<>+104(SB)/8, $0x3fe62e42fee00000
DATA tc<>+112(SB)/8, $0x3fe62e42fee00000
DATA tc<>+120(SB)/8, $0x3fe62e42fee00000
DATA tc<>+128(SB)/8, $0x3dea39ef00000000
DATA tc<>+136(SB)/8, $0x3dea39ef00000000
DATA tc<>+144(SB)/8, $0x3dea39ef00000000
DATA tc<>+152(SB)/8, $0x3dea39ef00000000
DATA tc<>+160(SB)/8, $0x3de6124613a86d09
DATA tc<>+168(SB)/8, $0x3de6124613a86d09
DATA tc<>+176(SB)/8, $0x3de6124613a86d09
DATA tc<>+184(SB)/8, $0x3de6124613a86d09
DATA tc<>+192(SB)/8, $0x3e21eed8eff8d898
DATA tc<>+200(SB)/8, $0x3e21eed8eff8d898
DATA tc<>+208(SB)/8, $0x3e21eed8eff8d898
DATA tc<>+216(SB)/8, $0x3e21eed8eff8d898
DATA tc<>+224(SB)/8, $0x3e5ae64567f544e4
DATA tc<>+232(SB)/8, $0x3e5ae64567f544e4
DATA tc<>+240(SB)/8, $0x3e5ae64567f544e4
DATA tc<>+248(SB)/8, $0x3e5ae64567f544e4
DATA tc<>+256(SB)/8, $0x3e927e4fb7789f5c
DATA tc<>+264(SB)/8, $0x3e927e4fb7789f5c
DATA tc<>+272(SB)/8, $0x3e927e4fb7789f5c
DATA tc<>+280(SB)/8, $0x3e927e4fb7789f5c
DATA tc<>+288(SB)/8, $0x3ec71de3a556c734
DATA tc<>+296(SB)/8, $0x3ec71de3a556c734
DATA tc<>+304(SB)/8, $0x3ec71de3a556c734
DATA tc<>+312(SB)/8, $0x3ec71de3a556c734
DATA tc<>+320(SB)/8, $0x3efa01a01a01a01a
DATA tc<>+328(SB)/8, $0x3efa01a01a01a01a
DATA tc<>+336(SB)/8, $0x3efa01a01a01a01a
DATA tc<>+344(SB)/8, $0x3efa01a01a01a01a
DATA tc<>+352(SB)/8, $0x3f2a01a01a01a01a
DATA tc<>+360(SB)/8, $0x3f2a01a01a01a01a
DATA tc<>+368(SB)/8, $0x3f2a01a01a01a01a
DATA tc<>+376(SB)/8, $0x3f2a01a01a01a01a
DATA tc<>+384(SB)/8, $0x3f56c16c16c16c17
DATA tc<>+392(SB)/8, $0x3f56c16c16c16c17
DATA tc<>+400(SB)/8, $0x3f56c16c16c16c17
DATA tc<>+408(SB)/8, $0x3f56c16c16c16c17
DATA tc<>+416(SB)/8, $0x3f81111111111111
DATA tc<>+424(SB)/8, $0x3f81111111111111
DATA tc<>+432(SB)/8, $0x3f81111111111111
DATA tc<>+440(SB)/8, $0x3f81111111111111
DATA tc<>+448(SB)/8, $0x3fa5555555555555
DATA tc<>+456(SB)/8, $0x3fa5555555555555
DATA tc<>+464(SB)/8, $0x3fa5555555555555
DATA tc<>+472(SB)/8, $0x3fa5555555555555
DATA tc<>+480(SB)/8, $0x3fc5555555555555
DATA tc<>+488(SB)/8, $0x3fc5555555555555
DATA tc<>+496(SB)/8, $0x3fc5555555555555
DATA tc<>+504(SB)/8, $0x3fc5555555555555
DATA tc<>+512(SB)/8, $0x3fe0000000000000
DATA tc<>+520(SB)/8, $0x3fe0000000000000
DATA tc<>+528(SB)/8, $0x3fe0000000000000
DATA tc<>+536(SB)/8, $0x3fe0000000000000
DATA tc<>+544(SB)/8, $0x3ff0000000000000
DATA tc<>+552(SB)/8, $0x3ff0000000000000
DATA tc<>+560(SB)/8, $0x3ff0000000000000
DATA tc<>+568(SB)/8, $0x3ff0000000000000
DATA tc<>+576(SB)/8, $0x3ff0000000000000
DATA tc<>+584(SB)/8, $0x3ff0000000000000
DATA tc<>+592(SB)/8, $0x3ff0000000000000
DATA tc<>+600(SB)/8, $0x3ff0000000000000
DATA tc<>+608(SB)/8, $0x3ff0000000000000
DATA tc<>+616(SB)/8, $0x3ff0000000000000
DATA tc<>+624(SB)/8, $0x3ff0000000000000
DATA tc<>+632(SB)/8, $0x3ff0000000000000
DATA tc<>+640(SB)/8, $0x00000000000003ff
DATA tc<>+648(SB)/8, $0x00000000000003ff
DATA tc<>+656(SB)/8, $0x00000000000003ff
DATA tc<>+664(SB)/8, $0x00000000000003ff
DATA tc<>+672(SB)/8, $0x3faba1ba1ba1ba1c
DATA tc<>+680(SB)/8, $0x3faba1ba1ba1ba1c
DATA tc<>+688(SB)/8, $0x3faba1ba1ba1ba1c
DATA tc<>+696(SB)/8, $0x3faba1ba1ba1ba1c
DATA tc<>+704(SB)/8, $0x3fc1111111111111
DATA tc<>+712(SB)/8, $0x3fc1111111111111
DATA tc<>+720(SB)/8, $0x3fc1111111111111
DATA tc<>+728(SB)/8, $0x3fc1111111111111
DATA tc<>+736(SB)/8, $0x3fd5555555555555
DATA tc<>+744(SB)/8, $0x3fd5555555555555
DATA tc<>+752(SB)/8, $0x3fd5555555555555
DATA tc<>+760(SB)/8, $0x3fd5555555555555
DATA tc<>+768(SB)/8, $0x7fffffffffffffff
DATA tc<>+776(SB)/8, $0x7fffffffffffffff
DATA tc<>+784(SB)/8, $0x7fffffffffffffff
DATA tc<>+792(SB)/8, $0x7fffffffffffffff
DATA tc<>+800(SB)/8, $0x3f947ae147ae147b
DATA tc<>+808(SB)/8, $0x3f947ae147ae147b
DATA tc<>+816(SB)/8, $0x3f947ae147ae147b
DATA tc<>+824(SB)/8, $0x3f947ae147ae147b
GLOBL tc<>(SB), RODATA|NOPTR, $832

// func tanh4(x []float64)
// Replaces x[i] by tanh(x[i]) for the first len(x)&^3 entries, four at a time:
// tanh(x) = (e-1)/(e+1) with e = exp(2x) from a degree-13 Taylor polynomial after
// range reduction (x clamped to ±20), and an odd polynomial for |x| < 0.02.
TEXT ·tanh4(SB), NOSPLIT, $0-24
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	SHRQ $2, CX
	MOVQ CX, DX
	ANDQ $1, DX
	SHRQ $1, CX
	JZ   single

	// Two independent vectors per iteration (Y0–Y7 and Y8–Y15), so that
	// their long dependency chains overlap; each lane computes exactly what
	// the single-vector code below computes.
pair:
	VMOVUPD      (SI), Y0
	VMOVUPD      32(SI), Y8
	VMINPD       tc<>+0(SB), Y0, Y1
	VMINPD       tc<>+0(SB), Y8, Y9
	VMAXPD       tc<>+32(SB), Y1, Y1
	VMAXPD       tc<>+32(SB), Y9, Y9
	VADDPD       Y1, Y1, Y1
	VADDPD       Y9, Y9, Y9
	VMULPD       tc<>+64(SB), Y1, Y2
	VMULPD       tc<>+64(SB), Y9, Y10
	VROUNDPD     $0, Y2, Y2
	VROUNDPD     $0, Y10, Y10
	VFNMADD231PD tc<>+96(SB), Y2, Y1
	VFNMADD231PD tc<>+96(SB), Y10, Y9
	VFNMADD231PD tc<>+128(SB), Y2, Y1
	VFNMADD231PD tc<>+128(SB), Y10, Y9
	VMOVUPD      tc<>+160(SB), Y3
	VMOVUPD      tc<>+160(SB), Y11
	VFMADD213PD  tc<>+192(SB), Y1, Y3
	VFMADD213PD  tc<>+192(SB), Y9, Y11
	VFMADD213PD  tc<>+224(SB), Y1, Y3
	VFMADD213PD  tc<>+224(SB), Y9, Y11
	VFMADD213PD  tc<>+256(SB), Y1, Y3
	VFMADD213PD  tc<>+256(SB), Y9, Y11
	VFMADD213PD  tc<>+288(SB), Y1, Y3
	VFMADD213PD  tc<>+288(SB), Y9, Y11
	VFMADD213PD  tc<>+320(SB), Y1, Y3
	VFMADD213PD  tc<>+320(SB), Y9, Y11
	VFMADD213PD  tc<>+352(SB), Y1, Y3
	VFMADD213PD  tc<>+352(SB), Y9, Y11
	VFMADD213PD  tc<>+384(SB), Y1, Y3
	VFMADD213PD  tc<>+384(SB), Y9, Y11
	VFMADD213PD  tc<>+416(SB), Y1, Y3
	VFMADD213PD  tc<>+416(SB), Y9, Y11
	VFMADD213PD  tc<>+448(SB), Y1, Y3
	VFMADD213PD  tc<>+448(SB), Y9, Y11
	VFMADD213PD  tc<>+480(SB), Y1, Y3
	VFMADD213PD  tc<>+480(SB), Y9, Y11
	VFMADD213PD  tc<>+512(SB), Y1, Y3
	VFMADD213PD  tc<>+512(SB), Y9, Y11
	VFMADD213PD  tc<>+544(SB), Y1, Y3
	VFMADD213PD  tc<>+544(SB), Y9, Y11
	VFMADD213PD  tc<>+576(SB), Y1, Y3
	VFMADD213PD  tc<>+576(SB), Y9, Y11
	VCVTPD2DQY   Y2, X4
	VCVTPD2DQY   Y10, X12
	VPMOVSXDQ    X4, Y4
	VPMOVSXDQ    X12, Y12
	VPADDQ       tc<>+640(SB), Y4, Y4
	VPADDQ       tc<>+640(SB), Y12, Y12
	VPSLLQ       $52, Y4, Y4
	VPSLLQ       $52, Y12, Y12
	VMULPD       Y4, Y3, Y3
	VMULPD       Y12, Y11, Y11
	VSUBPD       tc<>+608(SB), Y3, Y4
	VSUBPD       tc<>+608(SB), Y11, Y12
	VADDPD       tc<>+608(SB), Y3, Y5
	VADDPD       tc<>+608(SB), Y11, Y13
	VDIVPD       Y5, Y4, Y4
	VDIVPD       Y13, Y12, Y12
	VMULPD       Y0, Y0, Y5
	VMULPD       Y8, Y8, Y13
	VMOVUPD      tc<>+672(SB), Y6
	VMOVUPD      tc<>+672(SB), Y14
	VFNMADD213PD tc<>+704(SB), Y5, Y6
	VFNMADD213PD tc<>+704(SB), Y13, Y14
	VFNMADD213PD tc<>+736(SB), Y5, Y6
	VFNMADD213PD tc<>+736(SB), Y13, Y14
	VFNMADD213PD tc<>+608(SB), Y5, Y6
	VFNMADD213PD tc<>+608(SB), Y13, Y14
	VMULPD       Y0, Y6, Y6
	VMULPD       Y8, Y14, Y14
	VANDPD       tc<>+768(SB), Y0, Y7
	VANDPD       tc<>+768(SB), Y8, Y15
	VCMPPD       $1, tc<>+800(SB), Y7, Y7
	VCMPPD       $1, tc<>+800(SB), Y15, Y15
	VBLENDVPD    Y7, Y6, Y4, Y4
	VBLENDVPD    Y15, Y14, Y12, Y12
	VMOVUPD      Y4, (SI)
	VMOVUPD      Y12, 32(SI)
	ADDQ         $64, SI
	DECQ         CX
	JNZ          pair

single:
	TESTQ        DX, DX
	JZ           done
	VMOVUPD      (SI), Y0
	VMINPD       tc<>+0(SB), Y0, Y1
	VMAXPD       tc<>+32(SB), Y1, Y1
	VADDPD       Y1, Y1, Y1
	VMULPD       tc<>+64(SB), Y1, Y2
	VROUNDPD     $0, Y2, Y2
	VFNMADD231PD tc<>+96(SB), Y2, Y1
	VFNMADD231PD tc<>+128(SB), Y2, Y1
	VMOVUPD      tc<>+160(SB), Y3
	VFMADD213PD  tc<>+192(SB), Y1, Y3
	VFMADD213PD  tc<>+224(SB), Y1, Y3
	VFMADD213PD  tc<>+256(SB), Y1, Y3
	VFMADD213PD  tc<>+288(SB), Y1, Y3
	VFMADD213PD  tc<>+320(SB), Y1, Y3
	VFMADD213PD  tc<>+352(SB), Y1, Y3
	VFMADD213PD  tc<>+384(SB), Y1, Y3
	VFMADD213PD  tc<>+416(SB), Y1, Y3
	VFMADD213PD  tc<>+448(SB), Y1, Y3
	VFMADD213PD  tc<>+480(SB), Y1, Y3
	VFMADD213PD  tc<>+512(SB), Y1, Y3
	VFMADD213PD  tc<>+544(SB), Y1, Y3
	VFMADD213PD  tc<>+576(SB), Y1, Y3
	VCVTPD2DQY   Y2, X4
	VPMOVSXDQ    X4, Y4
	VPADDQ       tc<>+640(SB), Y4, Y4
	VPSLLQ       $52, Y4, Y4
	VMULPD       Y4, Y3, Y3
	VSUBPD       tc<>+608(SB), Y3, Y4
	VADDPD       tc<>+608(SB), Y3, Y5
	VDIVPD       Y5, Y4, Y4
	VMULPD       Y0, Y0, Y5
	VMOVUPD      tc<>+672(SB), Y6
	VFNMADD213PD tc<>+704(SB), Y5, Y6
	VFNMADD213PD tc<>+736(SB), Y5, Y6
	VFNMADD213PD tc<>+608(SB), Y5, Y6
	VMULPD       Y0, Y6, Y6
	VANDPD       tc<>+768(SB), Y0, Y7
	VCMPPD       $1, tc<>+800(SB), Y7, Y7
	VBLENDVPD    Y7, Y6, Y4, Y4
	VMOVUPD      Y4, (SI)

done:
	VZEROUPPER
	RET

// func tanh16(x []float64)
// tanh4 with AVX-512: replaces the first len(x)&^15 entries of x by their
// hyperbolic tangent, two 8-lane vectors per iteration. Every lane performs
// the same operations as in tanh4 (VRNDSCALEPD $0 rounds as VROUNDPD $0), so
// the results are identical.
TEXT ·tanh16(SB), NOSPLIT, $0-24
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	SHRQ $4, CX
	JZ   done16

loop16:
	VMOVUPD           (SI), Z0
	VMOVUPD           64(SI), Z8
	VMINPD.BCST       tc<>+0(SB), Z0, Z1
	VMINPD.BCST       tc<>+0(SB), Z8, Z9
	VMAXPD.BCST       tc<>+32(SB), Z1, Z1
	VMAXPD.BCST       tc<>+32(SB), Z9, Z9
	VADDPD            Z1, Z1, Z1
	VADDPD            Z9, Z9, Z9
	VMULPD.BCST       tc<>+64(SB), Z1, Z2
	VMULPD.BCST       tc<>+64(SB), Z9, Z10
	VRNDSCALEPD       $0, Z2, Z2
	VRNDSCALEPD       $0, Z10, Z10
	VFNMADD231PD.BCST tc<>+96(SB), Z2, Z1
	VFNMADD231PD.BCST tc<>+96(SB), Z10, Z9
	VFNMADD231PD.BCST tc<>+128(SB), Z2, Z1
	VFNMADD231PD.BCST tc<>+128(SB), Z10, Z9
	VBROADCASTSD      tc<>+160(SB), Z3
	VBROADCASTSD      tc<>+160(SB), Z11
	VFMADD213PD.BCST  tc<>+192(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+192(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+224(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+224(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+256(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+256(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+288(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+288(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+320(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+320(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+352(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+352(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+384(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+384(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+416(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+416(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+448(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+448(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+480(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+480(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+512(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+512(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+544(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+544(SB), Z9, Z11
	VFMADD213PD.BCST  tc<>+576(SB), Z1, Z3
	VFMADD213PD.BCST  tc<>+576(SB), Z9, Z11
	VCVTPD2DQ         Z2, Y4
	VCVTPD2DQ         Z10, Y12
	VPMOVSXDQ         Y4, Z4
	VPMOVSXDQ         Y12, Z12
	VPADDQ.BCST       tc<>+640(SB), Z4, Z4
	VPADDQ.BCST       tc<>+640(SB), Z12, Z12
	VPSLLQ            $52, Z4, Z4
	VPSLLQ            $52, Z12, Z12
	VMULPD            Z4, Z3, Z3
	VMULPD            Z12, Z11, Z11
	VSUBPD.BCST       tc<>+608(SB), Z3, Z4
	VSUBPD.BCST       tc<>+608(SB), Z11, Z12
	VADDPD.BCST       tc<>+608(SB), Z3, Z5
	VADDPD.BCST       tc<>+608(SB), Z11, Z13
	VDIVPD            Z5, Z4, Z4
	VDIVPD            Z13, Z12, Z12
	VMULPD            Z0, Z0, Z5
	VMULPD            Z8, Z8, Z13
	VBROADCASTSD      tc<>+672(SB), Z6
	VBROADCASTSD      tc<>+672(SB), Z14
	VFNMADD213PD.BCST tc<>+704(SB), Z5, Z6
	VFNMADD213PD.BCST tc<>+704(SB), Z13, Z14
	VFNMADD213PD.BCST tc<>+736(SB), Z5, Z6
	VFNMADD213PD.BCST tc<>+736(SB), Z13, Z14
	VFNMADD213PD.BCST tc<>+608(SB), Z5, Z6
	VFNMADD213PD.BCST tc<>+608(SB), Z13, Z14
	VMULPD            Z0, Z6, Z6
	VMULPD            Z8, Z14, Z14
	VPANDQ.BCST       tc<>+768(SB), Z0, Z7
	VPANDQ.BCST       tc<>+768(SB), Z8, Z15
	VCMPPD.BCST       $1, tc<>+800(SB), Z7, K1
	VCMPPD.BCST       $1, tc<>+800(SB), Z15, K2
	VBLENDMPD         Z6, Z4, K1, Z4
	VBLENDMPD         Z14, Z12, K2, Z12
	VMOVUPD           Z4, (SI)
	VMOVUPD           Z12, 64(SI)
	ADDQ              $128, SI
	DECQ              CX
	JNZ               loop16

done16:
	VZEROUPPER
	RET
