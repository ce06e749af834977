//go:build amd64 && !purego

#include "textflag.h"

// FOLD16_AND_FINISH folds what is left of p (SI, CX bytes, a multiple of
// 16) into the 128-bit remainder X1, 16 bytes at a time with the by128
// keys in X0, then takes the CRC32C of the remainder with two CRC32
// instructions and returns it. Both folding routines end with it.
#define FOLD16_AND_FINISH \
loop16: \
	CMPQ      CX, $16; \
	JB        done; \
	MOVOU     0(SI), X2; \
	MOVOA     X1, X5; \
	PCLMULQDQ $0x00, X0, X1; \
	PCLMULQDQ $0x11, X0, X5; \
	PXOR      X5, X1; \
	PXOR      X2, X1; \
	ADDQ      $16, SI; \
	SUBQ      $16, CX; \
	JMP       loop16; \
done: \
	MOVQ      X1, AX; \
	PEXTRQ    $1, X1, BX; \
	XORL      CX, CX; \
	CRC32Q    AX, CX; \
	CRC32Q    BX, CX; \
	MOVL      CX, ret+40(FP); \
	RET

// func updateVPCLMUL(crc uint32, p []byte, k *foldKeys) uint32
//
// Folds p (len ≥ 256, a multiple of 16) into 128 bits with AVX-512
// carry-less multiplies, then takes the CRC32C of those 128 bits with two
// CRC32 instructions. crc is the non-inverted CRC so far. See fold.go.
TEXT ·updateVPCLMUL(SB), NOSPLIT, $0-44
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	// The first 256 bytes, with the CRC so far added to their first 4.
	VMOVDQU64 0(SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VMOVD     AX, X10 // zeroes the rest of Z10
	VPXORQ    Z10, Z1, Z1
	ADDQ      $256, SI
	SUBQ      $256, CX

	VBROADCASTI32X4 0(DX), Z0 // by2048

	// While more than 12 KiB are left past a block, it also asks for the
	// line 12 KiB ahead. A mapping of the page cache comes in 4 KiB
	// pages, and the hardware prefetchers stop at a page's end, so that
	// otherwise every page begins with a page walk and a miss that nothing
	// overlaps (BenchmarkUpdateMapped: 11% faster). Nothing is asked for
	// past the end of p.
loop256:
	CMPQ       CX, $256
	JB         fold512
	CMPQ       CX, $(256+12288)
	JB         noprefetch
	PREFETCHT0 12288(SI)

noprefetch:
	VMOVDQU64  0(SI), Z11
	VMOVDQU64  64(SI), Z12
	VMOVDQU64  128(SI), Z13
	VMOVDQU64  192(SI), Z14
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPCLMULQDQ $0x11, Z0, Z2, Z6
	VPCLMULQDQ $0x00, Z0, Z2, Z2
	VPCLMULQDQ $0x11, Z0, Z3, Z7
	VPCLMULQDQ $0x00, Z0, Z3, Z3
	VPCLMULQDQ $0x11, Z0, Z4, Z8
	VPCLMULQDQ $0x00, Z0, Z4, Z4
	VPTERNLOGD $0x96, Z11, Z5, Z1
	VPTERNLOGD $0x96, Z12, Z6, Z2
	VPTERNLOGD $0x96, Z13, Z7, Z3
	VPTERNLOGD $0x96, Z14, Z8, Z4
	ADDQ       $256, SI
	SUBQ       $256, CX
	JMP        loop256

fold512:
	// Z1 into Z2, into Z3, into Z4: 512 bits apart.
	VBROADCASTI32X4 16(DX), Z0 // by512
	VPCLMULQDQ      $0x11, Z0, Z1, Z5
	VPCLMULQDQ      $0x00, Z0, Z1, Z1
	VPTERNLOGD      $0x96, Z2, Z5, Z1
	VPCLMULQDQ      $0x11, Z0, Z1, Z5
	VPCLMULQDQ      $0x00, Z0, Z1, Z1
	VPTERNLOGD      $0x96, Z3, Z5, Z1
	VPCLMULQDQ      $0x11, Z0, Z1, Z5
	VPCLMULQDQ      $0x00, Z0, Z1, Z1
	VPTERNLOGD      $0x96, Z4, Z5, Z1

	// The four lanes of Z1, each into the next: 128 bits apart.
	VEXTRACTI32X4 $1, Z1, X2
	VEXTRACTI32X4 $2, Z1, X3
	VEXTRACTI32X4 $3, Z1, X4
	VZEROUPPER
	MOVOU         32(DX), X0 // by128
	MOVOA         X1, X5
	PCLMULQDQ     $0x00, X0, X1
	PCLMULQDQ     $0x11, X0, X5
	PXOR          X5, X1
	PXOR          X2, X1
	MOVOA         X1, X5
	PCLMULQDQ     $0x00, X0, X1
	PCLMULQDQ     $0x11, X0, X5
	PXOR          X5, X1
	PXOR          X3, X1
	MOVOA         X1, X5
	PCLMULQDQ     $0x00, X0, X1
	PCLMULQDQ     $0x11, X0, X5
	PXOR          X5, X1
	PXOR          X4, X1

	FOLD16_AND_FINISH

// func updateVPCLMUL256(crc uint32, p []byte, k *foldKeys) uint32
//
// updateVPCLMUL for CPUs with VPCLMULQDQ but not AVX-512 (AMD Zen 3):
// the same 256 bytes a step, in eight 256-bit registers of two lanes
// each, so that each lane moves 2048 bits along the input as a 512-bit
// register's lanes do there.
TEXT ·updateVPCLMUL256(SB), NOSPLIT, $0-44
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	// The first 256 bytes, with the CRC so far added to their first 4.
	VMOVDQU 0(SI), Y1
	VMOVDQU 32(SI), Y2
	VMOVDQU 64(SI), Y3
	VMOVDQU 96(SI), Y4
	VMOVDQU 128(SI), Y5
	VMOVDQU 160(SI), Y6
	VMOVDQU 192(SI), Y7
	VMOVDQU 224(SI), Y8
	VMOVD   AX, X10 // zeroes the rest of Y10
	VPXOR   Y10, Y1, Y1
	ADDQ    $256, SI
	SUBQ    $256, CX

	VBROADCASTI128 0(DX), Y0 // by2048

	// As in updateVPCLMUL, the line 12 KiB ahead is asked for while more
	// than that is left.
loop256:
	CMPQ       CX, $256
	JB         fold256
	CMPQ       CX, $(256+12288)
	JB         noprefetch
	PREFETCHT0 12288(SI)

noprefetch:
	VPCLMULQDQ $0x11, Y0, Y1, Y9
	VPCLMULQDQ $0x00, Y0, Y1, Y1
	VPCLMULQDQ $0x11, Y0, Y2, Y10
	VPCLMULQDQ $0x00, Y0, Y2, Y2
	VPCLMULQDQ $0x11, Y0, Y3, Y11
	VPCLMULQDQ $0x00, Y0, Y3, Y3
	VPCLMULQDQ $0x11, Y0, Y4, Y12
	VPCLMULQDQ $0x00, Y0, Y4, Y4
	VPXOR      0(SI), Y9, Y9
	VPXOR      32(SI), Y10, Y10
	VPXOR      64(SI), Y11, Y11
	VPXOR      96(SI), Y12, Y12
	VPXOR      Y9, Y1, Y1
	VPXOR      Y10, Y2, Y2
	VPXOR      Y11, Y3, Y3
	VPXOR      Y12, Y4, Y4
	VPCLMULQDQ $0x11, Y0, Y5, Y9
	VPCLMULQDQ $0x00, Y0, Y5, Y5
	VPCLMULQDQ $0x11, Y0, Y6, Y10
	VPCLMULQDQ $0x00, Y0, Y6, Y6
	VPCLMULQDQ $0x11, Y0, Y7, Y11
	VPCLMULQDQ $0x00, Y0, Y7, Y7
	VPCLMULQDQ $0x11, Y0, Y8, Y12
	VPCLMULQDQ $0x00, Y0, Y8, Y8
	VPXOR      128(SI), Y9, Y9
	VPXOR      160(SI), Y10, Y10
	VPXOR      192(SI), Y11, Y11
	VPXOR      224(SI), Y12, Y12
	VPXOR      Y9, Y5, Y5
	VPXOR      Y10, Y6, Y6
	VPXOR      Y11, Y7, Y7
	VPXOR      Y12, Y8, Y8
	ADDQ       $256, SI
	SUBQ       $256, CX
	JMP        loop256

fold256:
	// Y1 into Y2, and so on into Y8: 256 bits apart.
	VBROADCASTI128 48(DX), Y0 // by256
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y2, Y1, Y1
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y3, Y1, Y1
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y4, Y1, Y1
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y5, Y1, Y1
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y6, Y1, Y1
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y7, Y1, Y1
	VPCLMULQDQ     $0x11, Y0, Y1, Y9
	VPCLMULQDQ     $0x00, Y0, Y1, Y1
	VPXOR          Y9, Y1, Y1
	VPXOR          Y8, Y1, Y1

	// The two lanes of Y1, the first into the second: 128 bits apart.
	VEXTRACTI128 $1, Y1, X2
	VZEROUPPER
	MOVOU        32(DX), X0 // by128
	MOVOA        X1, X5
	PCLMULQDQ    $0x00, X0, X1
	PCLMULQDQ    $0x11, X0, X5
	PXOR         X5, X1
	PXOR         X2, X1

	FOLD16_AND_FINISH

// func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL subleaf+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET
