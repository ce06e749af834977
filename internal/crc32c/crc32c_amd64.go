//go:build amd64 && !purego

package crc32c

import (
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// Which folding routine this CPU, and its OS (which must save the vector
// registers), can run; read-only after package initialization.
var (
	// canFold512: updateVPCLMUL, AVX-512 (Intel since Ice Lake, AMD
	// since Zen 4).
	canFold512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42
	// canFold256: updateVPCLMUL256, VPCLMULQDQ on 256-bit registers
	// (AMD Zen 3, and every CPU with canFold512). golang.org/x/sys/cpu
	// reports VPCLMULQDQ only beside AVX-512, so CPUID is asked here.
	canFold256 = cpu.X86.HasAVX2 && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42 && hasVPCLMULQDQ()
)

// hasVPCLMULQDQ reads CPUID leaf 7's VPCLMULQDQ bit (ECX bit 10).
func hasVPCLMULQDQ() bool {
	if maxLeaf, _, _, _ := cpuid(0, 0); maxLeaf < 7 {
		return false
	}
	_, _, ecx, _ := cpuid(7, 0)
	return ecx&(1<<10) != 0
}

// keys are the folding constants of both routines; read-only after
// package initialization.
var keys = newFoldKeys()

// updateVPCLMUL extends the non-inverted CRC-32C crc with p, whose length
// is at least 256 and a multiple of 16, with AVX-512 (crc32c_amd64.s).
//
//go:noescape
func updateVPCLMUL(crc uint32, p []byte, k *foldKeys) uint32

// updateVPCLMUL256 is updateVPCLMUL with 256-bit registers and no AVX-512.
//
//go:noescape
func updateVPCLMUL256(crc uint32, p []byte, k *foldKeys) uint32

// updateHybrid sums p (len ≥ 512, a multiple of 512) in five parts at
// once: its first half folded from the non-inverted crc into ret, and four
// streams of len/8 bytes with CRC32 instructions, each from zero, into
// s1..s4; combineHybrid puts them together.
//
//go:noescape
func updateHybrid(crc uint32, p []byte, k *foldKeys) (ret, s1, s2, s3, s4 uint32)

func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// updateFast extends crc with the longest prefix of p it can sum faster
// than hash/crc32 and returns the rest of p.
func updateFast(crc uint32, p []byte) (uint32, []byte) {
	if len(p) < vpclmulMin {
		return crc, p
	}
	n := len(p) &^ 15
	switch {
	case canFold512:
		return ^updateVPCLMUL(^crc, p[:n], &keys), p[n:]
	case canFold256 && len(p) >= hybridMin:
		c, rest := hybrid(^crc, p)
		return ^c, rest
	case canFold256:
		return ^updateVPCLMUL256(^crc, p[:n], &keys), p[n:]
	}
	return crc, p
}

// folding names the routine Update folds with, "" where it has none.
func folding() string {
	switch {
	case canFold512:
		return "AVX-512 VPCLMULQDQ"
	case canFold256:
		return "AVX2 VPCLMULQDQ"
	}
	return ""
}

// hybridMin is the shortest input updateHybrid sums: the four combines
// cost a few hundred nanoseconds, a sixtieth of what 16 KiB takes.
const hybridMin = 16 << 10

// hybrid extends the non-inverted CRC-32C crc with the longest prefix of
// p that is a multiple of 512 (len(p) ≥ hybridMin) and returns the rest.
func hybrid(crc uint32, p []byte) (uint32, []byte) {
	n := len(p) &^ 511
	folded, s1, s2, s3, s4 := updateHybrid(crc, p[:n], &keys)
	shift := streamShift(int64(n / 8))
	crc = multModP(shift, folded) ^ s1
	crc = multModP(shift, crc) ^ s2
	crc = multModP(shift, crc) ^ s3
	crc = multModP(shift, crc) ^ s4
	return crc, p[n:]
}

// lastShift caches streamShift's operator for the last stream length: a
// load sums pieces of a few sizes, and xPow8n costs as much as summing
// 32 KiB.
var lastShift atomic.Pointer[shiftOp]

type shiftOp struct {
	n  int64
	op uint32
}

// streamShift is x^(8n) modulo the polynomial: multModP by it appends n
// zero bytes to a CRC, as Combine does.
func streamShift(n int64) uint32 {
	if c := lastShift.Load(); c != nil && c.n == n {
		return c.op
	}
	op := xPow8n(n)
	lastShift.Store(&shiftOp{n: n, op: op})
	return op
}
