#include "textflag.h"

// Offsets of the geoTab constants (32 bytes each); keep in step with gt* in geomean.go.
#define ONE 0(R12)
#define MANT 32(R12)
#define MAXEXP 64(R12)
#define SQRT2 96(R12)
#define HALF 128(R12)
#define TWO 160(R12)
#define MAGIC 192(R12)
#define L1 224(R12)
#define L2 256(R12)
#define L3 288(R12)
#define L4 320(R12)
#define L5 352(R12)
#define L6 384(R12)
#define L7 416(R12)
#define LN2HI 448(R12)
#define LN2LO 480(R12)
#define ABS 512(R12)
#define RANGE 544(R12)
#define LOG2E 576(R12)
#define P1 608(R12)
#define P2 640(R12)
#define P3 672(R12)
#define P4 704(R12)
#define P5 736(R12)

// func geoMean4(bar *float64, t *[]float64, K, i0, n int, alpha float64, tab *float64) int
// The operations and their order are those of geoMeanPoint in geomean.go.
TEXT ·geoMean4(SB), NOSPLIT, $0-64
	MOVQ    bar+0(FP), DI
	MOVQ    t+8(FP), SI
	MOVQ    K+16(FP), R8
	MOVQ    i0+24(FP), R9
	SHLQ    $3, R9
	MOVQ    n+32(FP), R10
	VBROADCASTSD alpha+40(FP), Y15
	MOVQ    tab+48(FP), R12
	XORQ    R11, R11
	VPXOR   Y14, Y14, Y14
	MOVQ    R8, AX
	IMULQ   $2046, AX
	MOVQ    AX, X13
	VPBROADCASTQ X13, Y13 // 2·1023·K

group:
	CMPQ    R11, R10
	JGE     done
	VMOVUPD ONE, Y0 // m
	VPXOR   Y1, Y1, Y1 // e
	VPXOR   Y2, Y2, Y2 // declined lanes
	MOVQ    SI, BX
	MOVQ    R8, CX

kloop:
	MOVQ     (BX), DX
	VMOVUPD  (DX)(R9*1), Y3
	VPSRLQ   $52, Y3, Y4
	VPCMPEQQ Y14, Y4, Y5
	VPOR     Y5, Y2, Y2
	VPCMPGTQ MAXEXP, Y4, Y5
	VPOR     Y5, Y2, Y2
	VPADDQ   Y4, Y1, Y1
	VANDPD   MANT, Y3, Y3
	VORPD    ONE, Y3, Y3
	VMULPD   Y3, Y0, Y0
	VPSRLQ   $52, Y0, Y4
	VPADDQ   Y4, Y1, Y1
	VANDPD   MANT, Y0, Y0
	VORPD    ONE, Y0, Y0
	ADDQ     $24, BX
	DECQ     CX
	JNZ      kloop

	VPTEST Y2, Y2
	JNZ    done
	VPSUBQ Y13, Y1, Y1

	// log(m·2^e)
	VCMPPD    $0x1d, SQRT2, Y0, Y5 // m >= √2
	VSUBPD    ONE, Y0, Y6
	VMULPD    HALF, Y0, Y7
	VSUBPD    ONE, Y7, Y7
	VBLENDVPD Y5, Y7, Y6, Y6 // f
	VPSUBQ    Y5, Y1, Y1
	VPADDQ    MAGIC, Y1, Y1
	VSUBPD    MAGIC, Y1, Y8 // ed
	VADDPD    TWO, Y6, Y9
	VDIVPD    Y9, Y6, Y9 // s
	VMULPD    Y9, Y9, Y10 // s2
	VMULPD    Y10, Y10, Y11 // s4
	VMULPD    L7, Y11, Y12
	VADDPD    L5, Y12, Y12
	VMULPD    Y12, Y11, Y12
	VADDPD    L3, Y12, Y12
	VMULPD    Y12, Y11, Y12
	VADDPD    L1, Y12, Y12
	VMULPD    Y12, Y10, Y12 // t1
	VMULPD    L6, Y11, Y10
	VADDPD    L4, Y10, Y10
	VMULPD    Y10, Y11, Y10
	VADDPD    L2, Y10, Y10
	VMULPD    Y10, Y11, Y10 // t2
	VADDPD    Y10, Y12, Y12 // R
	VMULPD    HALF, Y6, Y11
	VMULPD    Y6, Y11, Y11 // hfsq
	VADDPD    Y12, Y11, Y12
	VMULPD    Y12, Y9, Y12 // s·(hfsq+R)
	VMULPD    LN2LO, Y8, Y10
	VADDPD    Y10, Y12, Y12
	VSUBPD    Y12, Y11, Y12
	VSUBPD    Y6, Y12, Y12
	VMULPD    LN2HI, Y8, Y10
	VSUBPD    Y12, Y10, Y12 // log
	VMULPD    Y12, Y15, Y0 // x = α·log

	VANDPD ABS, Y0, Y5
	VCMPPD $0x06, RANGE, Y5, Y5 // !(|x| <= range)
	VPTEST Y5, Y5
	JNZ    done

	// exp(x)
	VMULPD   LOG2E, Y0, Y1
	VROUNDPD $0, Y1, Y1 // kd
	VMULPD   LN2HI, Y1, Y2
	VSUBPD   Y2, Y0, Y2 // hi
	VMULPD   LN2LO, Y1, Y3 // lo
	VSUBPD   Y3, Y2, Y4 // r
	VMULPD   Y4, Y4, Y5 // t
	VMULPD   P5, Y5, Y6
	VADDPD   P4, Y6, Y6
	VMULPD   Y6, Y5, Y6
	VADDPD   P3, Y6, Y6
	VMULPD   Y6, Y5, Y6
	VADDPD   P2, Y6, Y6
	VMULPD   Y6, Y5, Y6
	VADDPD   P1, Y6, Y6
	VMULPD   Y6, Y5, Y6
	VSUBPD   Y6, Y4, Y6 // c
	VMULPD   Y6, Y4, Y7 // r·c
	VMOVUPD  TWO, Y8
	VSUBPD   Y6, Y8, Y8
	VDIVPD   Y8, Y7, Y7
	VSUBPD   Y7, Y3, Y7
	VSUBPD   Y2, Y7, Y7
	VMOVUPD  ONE, Y8
	VSUBPD   Y7, Y8, Y7 // y
	VADDPD   MAGIC, Y1, Y1
	VPSUBQ   MAGIC, Y1, Y1
	VPSLLQ   $52, Y1, Y1
	VPADDQ   Y1, Y7, Y7 // p = y·2^kd
	VMOVUPD  Y7, (DI)

	MOVQ SI, BX
	MOVQ R8, CX

dloop:
	MOVQ    (BX), DX
	VMOVUPD (DX)(R9*1), Y3
	VDIVPD  Y3, Y7, Y3
	VMOVUPD Y3, (DX)(R9*1)
	ADDQ    $24, BX
	DECQ    CX
	JNZ     dloop

	ADDQ $32, DI
	ADDQ $32, R9
	INCQ R11
	JMP  group

done:
	MOVQ       R11, ret+56(FP)
	VZEROUPPER
	RET
