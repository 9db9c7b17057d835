"""AVX2/FMA (8-lane) float32 kernels for kernels32_amd64.s; called by kernels32_gen.py."""


def emit(w, c, head, GEMM):
    """Appends the AVX2 kernels with w (one output line), c (a constant's address),
    head (argument loads) and GEMM (the multi-row kernels' arguments), all from kernels32_gen.py."""
    # ===================== AVX2 + FMA kernels (8 lanes) =====================
    w("// AVX2/FMA versions for CPUs without AVX-512: 8 lanes, column tails masked")
    w("// with VMASKMOVPS (mask: 8 int32 lanes, -1 to keep). Each entry is summed")
    w("// exactly as by the AVX-512 kernels (from zero, one fused multiply-add per")
    w("// l in order, then stored or added).\n")

    # 4x16 full
    w("// func a2gemm4x16(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int)")
    w("TEXT ·a2gemm4x16(SB), NOSPLIT, $0-72")
    head(GEMM + [("acc+64", "BX", 0)])
    w("""	LEAQ (SI)(R8*1), R12
    	LEAQ (R12)(R8*1), R13
    	LEAQ (R13)(R8*1), R14""")
    for i in range(8): w("\tVXORPS Y%d, Y%d, Y%d" % (i,i,i))
    w("b16loop:")
    w("\tVMOVUPS (DI), Y8\n\tVMOVUPS 32(DI), Y9")
    for r,reg in enumerate(["SI","R12","R13","R14"]):
        w("\tVBROADCASTSS (%s), Y%d" % (reg, 10+r))
    for r in range(4):
        for v in range(2):
            w("\tVFMADD231PS Y%d, Y%d, Y%d" % (8+v, 10+r, 2*r+v))
    w("""	ADDQ R9, SI
    	ADDQ R9, R12
    	ADDQ R9, R13
    	ADDQ R9, R14
    	ADDQ R10, DI
    	DECQ CX
    	JNZ  b16loop
    	TESTQ BX, BX
    	JZ   b16store
    	MOVQ DX, AX""")
    for r in range(4):
        for v in range(2):
            w("\tVADDPS %d(AX), Y%d, Y%d" % (32*v, 2*r+v, 2*r+v))
        if r<3: w("\tADDQ R11, AX")
    w("b16store:")
    for r in range(4):
        for v in range(2):
            w("\tVMOVUPS Y%d, %d(DX)" % (2*r+v, 32*v))
        if r<3: w("\tADDQ R11, DX")
    w("\tVZEROUPPER\n\tRET\n")

    # 8x8 masked
    w("// func a2gemm8x8(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int, mask *[8]int32)")
    w("TEXT ·a2gemm8x8(SB), NOSPLIT, $0-80")
    head(GEMM)
    w("""	MOVQ mask+72(FP), AX
    	VMOVDQU (AX), Y15
    	LEAQ (R8)(R8*2), R15
    	LEAQ (SI)(R8*4), R12""")
    for i in range(8): w("\tVXORPS Y%d, Y%d, Y%d" % (i,i,i))
    w("b8loop:")
    w("\tVMASKMOVPS (DI), Y15, Y8")
    rows=[]
    for base in ["SI","R12"]:
        for addr in ["(%s)","(%s)(R8*1)","(%s)(R8*2)","(%s)(R15*1)"]:
            rows.append(addr % base)
    for r,addr in enumerate(rows):
        w("\tVBROADCASTSS %s, Y%d" % (addr, 9+(r%4)))
        w("\tVFMADD231PS Y8, Y%d, Y%d" % (9+(r%4), r))
    w("""	ADDQ R9, SI
    	ADDQ R9, R12
    	ADDQ R10, DI
    	DECQ CX
    	JNZ  b8loop
    	MOVQ acc+64(FP), BX
    	TESTQ BX, BX
    	JZ   b8store
    	MOVQ DX, AX""")
    for r in range(8):
        w("\tVMASKMOVPS (AX), Y15, Y8")
        w("\tVADDPS Y8, Y%d, Y%d" % (r, r))
        if r<7: w("\tADDQ R11, AX")
    w("b8store:")
    for r in range(8):
        w("\tVMASKMOVPS Y%d, Y15, (DX)" % r)
        if r<7: w("\tADDQ R11, DX")
    w("\tVZEROUPPER\n\tRET\n")

    # 1x8 masked
    w("// func a2gemm1x8(k int, a *float32, acs int, b *float32, ldb int, c *float32, acc int, mask *[8]int32)")
    w("TEXT ·a2gemm1x8(SB), NOSPLIT, $0-64")
    head([("k+0","CX",0),("a+8","SI",0),("acs+16","R9",1),("b+24","DI",0),("ldb+32","R10",1),("c+40","DX",0),("acc+48","BX",0)])
    w("""	MOVQ mask+56(FP), AX
    	VMOVDQU (AX), Y15
    	VXORPS Y0, Y0, Y0
    r8loop:
    	VMASKMOVPS (DI), Y15, Y8
    	VBROADCASTSS (SI), Y9
    	VFMADD231PS Y8, Y9, Y0
    	ADDQ R9, SI
    	ADDQ R10, DI
    	DECQ CX
    	JNZ  r8loop
    	TESTQ BX, BX
    	JZ   r8store
    	VMASKMOVPS (DX), Y15, Y8
    	VADDPS Y8, Y0, Y0
    r8store:
    	VMASKMOVPS Y0, Y15, (DX)
    	VZEROUPPER
    	RET
    """)

    # bias + tanh AVX2 (exact division)
    w("// func a2biasTanh(y, b *float32, n, out int, mask *[8]int32)")
    w("// biasTanhAVX with 8 lanes and an exact division; mask selects the out%8")
    w("// lanes of each row's last chunk (all lanes when out%8 == 0).")
    w("TEXT ·a2biasTanh(SB), NOSPLIT, $0-40")
    w("""	MOVQ y+0(FP), SI
    	MOVQ n+16(FP), R8
    	MOVQ out+24(FP), R9
    	MOVQ mask+32(FP), AX
    	VMOVDQU (AX), Y15
    	TESTQ R8, R8
    	JZ   a2btdone
    	TESTQ R9, R9
    	JZ   a2btdone
    	VBROADCASTSS %s, Y12
    	VBROADCASTSS %s, Y13
    	VBROADCASTSS %s, Y14
    a2btrow:
    	MOVQ b+8(FP), DI
    	MOVQ R9, CX
    a2btloop:
    	CMPQ CX, $8
    	JL   a2btpart
    	VMOVUPS (SI), Y0
    	VADDPS (DI), Y0, Y0
    	JMP  a2btcalc
    a2btpart:
    	VMASKMOVPS (SI), Y15, Y0
    	VMASKMOVPS (DI), Y15, Y1
    	VADDPS Y1, Y0, Y0
    a2btcalc:
    	VMINPS Y12, Y0, Y0
    	VMAXPS Y13, Y0, Y0
    	VMULPS Y0, Y0, Y1""" % (c("clamp"), c("nclamp"), c("one")))
    w("\tVBROADCASTSS %s, Y2" % c("a13"))
    for p in ["a11","a9","a7","a5","a3","a1"]:
        w("\tVBROADCASTSS %s, Y3" % c(p))
        w("\tVFMADD213PS Y3, Y1, Y2")
    w("\tVMULPS Y0, Y2, Y2")
    w("\tVBROADCASTSS %s, Y4" % c("b6"))
    for p in ["b4","b2","b0"]:
        w("\tVBROADCASTSS %s, Y3" % c(p))
        w("\tVFMADD213PS Y3, Y1, Y4")
    w("""	VDIVPS Y4, Y2, Y2
    	CMPQ CX, $8
    	JL   a2btstorepart
    	VMOVUPS Y2, (SI)
    	ADDQ $32, SI
    	ADDQ $32, DI
    	SUBQ $8, CX
    	JG   a2btloop
    	JMP  a2btnext
    a2btstorepart:
    	VMASKMOVPS Y2, Y15, (SI)
    	LEAQ (SI)(CX*4), SI
    a2btnext:
    	DECQ R8
    	JNZ  a2btrow
    a2btdone:
    	VZEROUPPER
    	RET
    """)

    # tanh grad AVX2
    w("// func a2tanhGrad(n int, d, y *float32)")
    w("TEXT ·a2tanhGrad(SB), NOSPLIT, $0-24")
    w("""	MOVQ n+0(FP), CX
    	MOVQ d+8(FP), DI
    	MOVQ y+16(FP), SI
    	VBROADCASTSS %s, Y15
    	SHRQ $3, CX
    	JZ   a2tgdone
    a2tgloop:
    	VMOVUPS (SI), Y0
    	VMULPS Y0, Y0, Y0
    	VSUBPS Y0, Y15, Y0
    	VMULPS (DI), Y0, Y0
    	VMOVUPS Y0, (DI)
    	ADDQ $32, SI
    	ADDQ $32, DI
    	DECQ CX
    	JNZ  a2tgloop
    a2tgdone:
    	VZEROUPPER
    	RET
    """ % c("one"))

    # adam AVX2
    w("// func a2adam(n int, p, grad, m, v *float32, k *[8]float32)")
    w("TEXT ·a2adam(SB), NOSPLIT, $0-48")
    w("""	MOVQ n+0(FP), CX
    	MOVQ p+8(FP), DI
    	MOVQ grad+16(FP), SI
    	MOVQ m+24(FP), R8
    	MOVQ v+32(FP), R9
    	MOVQ k+40(FP), AX
    	VBROADCASTSS 0(AX), Y8
    	VBROADCASTSS 4(AX), Y9
    	VBROADCASTSS 8(AX), Y10
    	VBROADCASTSS 12(AX), Y11
    	VBROADCASTSS 16(AX), Y12
    	VBROADCASTSS 20(AX), Y13
    	VBROADCASTSS 24(AX), Y14
    	VBROADCASTSS 28(AX), Y15
    	SHRQ $3, CX
    	JZ   a2adone
    a2aloop:
    	VMULPS (SI), Y15, Y0
    	VMULPS (R8), Y8, Y1
    	VMULPS Y0, Y9, Y2
    	VADDPS Y2, Y1, Y1
    	VMOVUPS Y1, (R8)
    	VMULPS (R9), Y10, Y3
    	VMULPS Y0, Y11, Y4
    	VMULPS Y0, Y4, Y4
    	VADDPS Y4, Y3, Y3
    	VMOVUPS Y3, (R9)
    	VSQRTPS Y3, Y3
    	VMULPS Y13, Y3, Y3
    	VADDPS Y14, Y3, Y3
    	VMULPS Y1, Y12, Y1
    	VDIVPS Y3, Y1, Y1
    	VMOVUPS (DI), Y5
    	VSUBPS Y1, Y5, Y5
    	VMOVUPS Y5, (DI)
    	ADDQ $32, SI
    	ADDQ $32, DI
    	ADDQ $32, R8
    	ADDQ $32, R9
    	DECQ CX
    	JNZ  a2aloop
    a2adone:
    	VZEROUPPER
    	RET
    """)

    # sum of squares AVX2: 8 accumulators of 4 doubles
    w("// func a2sumSq(n int, x *float32, p *[32]float64)")
    w("TEXT ·a2sumSq(SB), NOSPLIT, $0-24")
    w("\tMOVQ n+0(FP), CX\n\tMOVQ x+8(FP), SI\n\tMOVQ p+16(FP), DI")
    for i in range(8): w("\tVMOVUPD %d(DI), Y%d" % (32*i, i))
    w("\tSHRQ $5, CX\n\tJZ   a2sstore\na2sloop:")
    for i in range(8):
        w("\tVCVTPS2PD %d(SI), Y%d" % (16*i, 8+(i%4)))
        w("\tVMULPD Y%d, Y%d, Y%d" % (8+(i%4), 8+(i%4), 8+(i%4)))
        w("\tVADDPD Y%d, Y%d, Y%d" % (8+(i%4), i, i))
    w("\tADDQ $128, SI\n\tDECQ CX\n\tJNZ  a2sloop\na2sstore:")
    for i in range(8): w("\tVMOVUPD Y%d, %d(DI)" % (i, 32*i))
    w("\tVZEROUPPER\n\tRET\n")

    # transpose AVX2 gathers
    w("// func a2transpose(dst, src *float32, rows, cols int, idx *[8]int32)")
    w("// transposeAVX with 8-lane gathers; rows%8 tail entries are copied by the caller.")
    w("TEXT ·a2transpose(SB), NOSPLIT, $0-40")
    w("""	MOVQ dst+0(FP), DI
    	MOVQ src+8(FP), SI
    	MOVQ rows+16(FP), R8
    	MOVQ cols+24(FP), R9
    	MOVQ idx+32(FP), AX
    	VMOVDQU (AX), Y15
    	MOVQ R9, R10
    	SHLQ $5, R10
    	MOVQ R8, R13
    	SHRQ $3, R13
    	JZ   a2trdone
    	MOVQ R8, R14
    	SHLQ $2, R14
    	XORQ R11, R11
    a2trcol:
    	MOVQ SI, R12
    	MOVQ DI, BX
    	MOVQ R13, CX
    a2trrow:
    	VPCMPEQD Y14, Y14, Y14
    	VXORPS Y0, Y0, Y0
    	VGATHERDPS Y14, (R12)(Y15*4), Y0
    	VMOVUPS Y0, (BX)
    	ADDQ R10, R12
    	ADDQ $32, BX
    	DECQ CX
    	JNZ  a2trrow
    	ADDQ R14, DI
    	ADDQ $4, SI
    	INCQ R11
    	CMPQ R11, R9
    	JL   a2trcol
    a2trdone:
    	VZEROUPPER
    	RET
    """)

