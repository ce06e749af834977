//go:build amd64 && !purego

#include "textflag.h"

// FOLD128(x) folds the 128-bit remainder X1 128 bits along and adds x:
// the by128 keys in X0, X5 scratch. Every routine's last steps.
#define FOLD128(x) \
	MOVOA     X1, X5; \
	PCLMULQDQ $0x00, X0, X1; \
	PCLMULQDQ $0x11, X0, X5; \
	PXOR      X5, X1; \
	PXOR      x, X1

// FOLD16 folds what is left of p (SI, CX bytes, a multiple of 16) into
// the 128-bit remainder X1, 16 bytes at a time with the by128 keys in X0.
#define FOLD16 \
loop16: \
	CMPQ      CX, $16; \
	JB        done16; \
	MOVOU     0(SI), X2; \
	FOLD128(X2); \
	ADDQ      $16, SI; \
	SUBQ      $16, CX; \
	JMP       loop16; \
done16:

// FINISH takes the CRC32C of the 128-bit remainder X1 into CX with two
// CRC32 instructions (AX and BX scratch).
#define FINISH \
	MOVQ      X1, AX; \
	PEXTRQ    $1, X1, BX; \
	XORL      CX, CX; \
	CRC32Q    AX, CX; \
	CRC32Q    BX, CX

// FOLD16_AND_FINISH is FOLD16 and FINISH, and returns the CRC: how the
// folding routines end.
#define FOLD16_AND_FINISH \
	FOLD16; \
	FINISH; \
	MOVL CX, ret+40(FP); \
	RET

// SHIFT_ADD(s) moves the CRC in CX along the stream length, whose key
// x^(8n-33) is in X3, and adds the next stream's CRC s: CRC32(clmul(CX,
// key)) is CX·x^(8n) modulo the polynomial (AX and X2 scratch).
#define SHIFT_ADD(s) \
	MOVQ      CX, X2; \
	PCLMULQDQ $0x00, X3, X2; \
	MOVQ      X2, AX; \
	XORL      CX, CX; \
	CRC32Q    AX, CX; \
	XORL      s, CX

// FOLD_YMM(r, off) folds 256-bit register r 2048 bits along, adding the
// input at off(SI): the step of updateVPCLMUL256's and updateHybrid's
// loops, the by2048 keys in Y0, Y9 scratch.
#define FOLD_YMM(r, off) \
	VPCLMULQDQ $0x11, Y0, r, Y9; \
	VPCLMULQDQ $0x00, Y0, r, r; \
	VPXOR      off(SI), Y9, Y9; \
	VPXOR      Y9, r, r

// CRC4(off) adds 8 bytes at off of each of the four streams (DI, DI+R9,
// DI+R10, DI+R11) to their CRCs (AX, BX, R12, R13).
#define CRC4(off) \
	CRC32Q off(DI), AX; \
	CRC32Q off(DI)(R9*1), BX; \
	CRC32Q off(DI)(R10*1), R12; \
	CRC32Q off(DI)(R11*1), R13

// FOLD_INTO(r) folds Y1 256 bits along into r, leaving the sum in Y1:
// the by256 keys in Y0, Y9 scratch.
#define FOLD_INTO(r) \
	VPCLMULQDQ $0x11, Y0, Y1, Y9; \
	VPCLMULQDQ $0x00, Y0, Y1, Y1; \
	VPXOR      Y9, Y1, Y1; \
	VPXOR      r, Y1, Y1

// REDUCE_YMM folds the eight 256-bit registers Y1..Y8 (the keys at DX)
// into the 128-bit remainder X1, and leaves the by128 keys in X0, as
// FOLD16_AND_FINISH wants them.
#define REDUCE_YMM \
	VBROADCASTI128 48(DX), Y0; \
	FOLD_INTO(Y2); \
	FOLD_INTO(Y3); \
	FOLD_INTO(Y4); \
	FOLD_INTO(Y5); \
	FOLD_INTO(Y6); \
	FOLD_INTO(Y7); \
	FOLD_INTO(Y8); \
	VEXTRACTI128 $1, Y1, X2; \
	VZEROUPPER; \
	MOVOU        32(DX), X0; \
	FOLD128(X2)

// LOAD_YMM loads the first 256 bytes at SI into Y1..Y8, adds the
// non-inverted CRC so far (AX) to their first 4, and moves SI and CX
// past them.
#define LOAD_YMM \
	VMOVDQU 0(SI), Y1; \
	VMOVDQU 32(SI), Y2; \
	VMOVDQU 64(SI), Y3; \
	VMOVDQU 96(SI), Y4; \
	VMOVDQU 128(SI), Y5; \
	VMOVDQU 160(SI), Y6; \
	VMOVDQU 192(SI), Y7; \
	VMOVDQU 224(SI), Y8; \
	VMOVD   AX, X10; \
	VPXOR   Y10, Y1, Y1; \
	ADDQ    $256, SI; \
	SUBQ    $256, CX

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
	// overlaps (BenchmarkUpdateMapped; docs/PERFORMANCE-NOTES.md,
	// internal/crc32c). Nothing is asked for past the end of p.
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
	FOLD128(X2)
	FOLD128(X3)
	FOLD128(X4)

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

	LOAD_YMM
	VBROADCASTI128 0(DX), Y0 // by2048

	// As in updateVPCLMUL, the line 12 KiB ahead is asked for while more
	// than that is left.
loop256:
	CMPQ       CX, $256
	JB         reduce
	CMPQ       CX, $(256+12288)
	JB         noprefetch
	PREFETCHT0 12288(SI)

noprefetch:
	FOLD_YMM(Y1, 0)
	FOLD_YMM(Y2, 32)
	FOLD_YMM(Y3, 64)
	FOLD_YMM(Y4, 96)
	FOLD_YMM(Y5, 128)
	FOLD_YMM(Y6, 160)
	FOLD_YMM(Y7, 192)
	FOLD_YMM(Y8, 224)
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  loop256

reduce:
	REDUCE_YMM
	FOLD16_AND_FINISH

// func updateHybrid(crc uint32, p []byte, k *foldKeys, shift uint32) uint32
//
// For CPUs whose VPCLMULQDQ and CRC32 instructions each sum about 8 bytes
// a cycle (AMD Zen 3): p (len ≥ 512, a multiple of 512) is summed as five
// parts at once, so that their misses overlap. The first half is folded as
// in updateVPCLMUL256, from the non-inverted CRC so far; the second half
// is four streams of len/8 bytes, each summed from zero with CRC32
// instructions. Then the CRCs are combined in order, each moved along a
// stream's length by shift, x^(8·len/8−33) modulo the polynomial.
TEXT ·updateHybrid(SB), NOSPLIT, $0-52
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	SHRQ $1, CX           // CX: bytes of the folded half
	LEAQ (SI)(CX*1), DI   // DI: the first stream
	MOVQ CX, R9
	SHRQ $2, R9           // R9: bytes of each stream
	LEAQ (R9)(R9*1), R10  // R10: 2 streams
	LEAQ (R10)(R9*1), R11 // R11: 3 streams

	LOAD_YMM

	XORL AX, AX
	XORL BX, BX
	XORL R12, R12
	XORL R13, R13

	VBROADCASTI128 0(DX), Y0 // by2048

	// Each step folds 256 bytes of the first half and sums 64 bytes of
	// each stream; the streams end 64 bytes after the folded half, which
	// the loop after this one sums.
loop:
	CMPQ CX, $256
	JB   tail
	CMPQ CX, $(256+12288)
	JB   noprefetch
	PREFETCHT0 12288(SI)
	PREFETCHT0 3072(DI)
	PREFETCHT0 3072(DI)(R9*1)
	PREFETCHT0 3072(DI)(R10*1)
	PREFETCHT0 3072(DI)(R11*1)

noprefetch:
	FOLD_YMM(Y1, 0)
	CRC4(0)
	FOLD_YMM(Y2, 32)
	CRC4(8)
	FOLD_YMM(Y3, 64)
	CRC4(16)
	FOLD_YMM(Y4, 96)
	CRC4(24)
	FOLD_YMM(Y5, 128)
	CRC4(32)
	FOLD_YMM(Y6, 160)
	CRC4(40)
	FOLD_YMM(Y7, 192)
	CRC4(48)
	FOLD_YMM(Y8, 224)
	CRC4(56)
	ADDQ $256, SI
	ADDQ $64, DI
	SUBQ $256, CX
	JMP  loop

tail:
	// The streams' last 64 bytes.
	CRC4(0)
	CRC4(8)
	CRC4(16)
	CRC4(24)
	CRC4(32)
	CRC4(40)
	CRC4(48)
	CRC4(56)
	MOVL AX, R8 // FINISH takes AX and BX
	MOVL BX, R10

	XORL CX, CX
	REDUCE_YMM
	FINISH

	MOVL  shift+40(FP), DX
	MOVQ  DX, X3
	SHIFT_ADD(R8)
	SHIFT_ADD(R10)
	SHIFT_ADD(R12)
	SHIFT_ADD(R13)
	MOVL  CX, ret+48(FP)
	RET

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
