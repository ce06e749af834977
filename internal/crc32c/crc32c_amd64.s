//go:build amd64 && !purego

#include "textflag.h"

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

loop16:
	// What is left, 16 bytes at a time.
	CMPQ      CX, $16
	JB        done
	MOVOU     0(SI), X2
	MOVOA     X1, X5
	PCLMULQDQ $0x00, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X2, X1
	ADDQ      $16, SI
	SUBQ      $16, CX
	JMP       loop16

done:
	MOVQ   X1, AX
	PEXTRQ $1, X1, BX
	XORL   CX, CX
	CRC32Q AX, CX
	CRC32Q BX, CX
	MOVL   CX, ret+40(FP)
	RET
