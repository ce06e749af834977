//go:build amd64 && !purego

package crc32c

import "golang.org/x/sys/cpu"

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
