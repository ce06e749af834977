//go:build amd64 && !purego

package crc32c

import (
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// Which folding routines this CPU, and its OS (which must save the vector
// registers), can run; read-only after package initialization.
var (
	// canFold512: updateVPCLMUL, AVX-512 (Intel since Ice Lake, AMD
	// since Zen 4).
	canFold512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42
	// canFold256: updateVPCLMUL256 and updateHybrid, VPCLMULQDQ on
	// 256-bit registers (AMD Zen 3, and every CPU with canFold512).
	// golang.org/x/sys/cpu reports VPCLMULQDQ only beside AVX-512, so
	// CPUID is asked here.
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

// keys are the folding constants of the routines; read-only after package
// initialization.
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

// updateHybrid extends the non-inverted crc with p (len ≥ 512, a multiple
// of 512) in five parts at once: its first half folded as
// updateVPCLMUL256 does, and four streams of len/8 bytes with CRC32
// instructions, combined with shift = hybridShift(len/8).
//
//go:noescape
func updateHybrid(crc uint32, p []byte, k *foldKeys, shift uint32) uint32

func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// routine is one way of summing; foldWith runs it.
type routine int

const (
	noFold    routine = iota
	fold512           // updateVPCLMUL
	fold256           // updateVPCLMUL256
	hybrid256         // updateHybrid
)

var routineNames = [...]string{noFold: "", fold512: "AVX-512 VPCLMULQDQ", fold256: "AVX2 VPCLMULQDQ", hybrid256: "AVX2 VPCLMULQDQ and CRC32 streams"}

func (r routine) String() string { return routineNames[r] }

// hybridMin is the shortest input updateHybrid sums. In cache it is
// faster than folding alone from 4 KiB on (BenchmarkUpdate), but only
// while the length's shift key is cached: a new length's key (xPow) costs
// many times what the hybrid saves on 4 KiB and about what it saves on
// 16 KiB (docs/PERFORMANCE-NOTES.md, internal/crc32c). gdsload sums runs
// of one length (rdmafs segments, shard pieces), where the key stays
// cached.
const hybridMin = 16 << 10

// pick is the routine Update runs for n bytes on this CPU.
func pick(n int) routine {
	switch {
	case canFold512:
		return fold512
	case canFold256 && n >= hybridMin:
		return hybrid256
	case canFold256:
		return fold256
	}
	return noFold
}

// updateFast extends crc with the longest prefix of p it can sum faster
// than hash/crc32 and returns the rest of p.
func updateFast(crc uint32, p []byte) (uint32, []byte) { return foldWith(pick(len(p)), crc, p) }

// foldWith extends crc with the longest prefix of p that routine r sums
// and returns the rest of p: none where p is too short for r.
func foldWith(r routine, crc uint32, p []byte) (uint32, []byte) {
	switch {
	case r == fold512 && len(p) >= vpclmulMin:
		n := len(p) &^ 15
		return ^updateVPCLMUL(^crc, p[:n], &keys), p[n:]
	case r == fold256 && len(p) >= vpclmulMin:
		n := len(p) &^ 15
		return ^updateVPCLMUL256(^crc, p[:n], &keys), p[n:]
	case r == hybrid256 && len(p) >= 512:
		n := len(p) &^ 511
		return ^updateHybrid(^crc, p[:n], &keys, hybridShift(int64(n/8))), p[n:]
	}
	return crc, p
}

// folding names the routines Update folds with, "" where it has none.
func folding() string {
	if r := pick(hybridMin); r != pick(vpclmulMin) {
		return pick(vpclmulMin).String() + "; from " + strconv.Itoa(hybridMin>>10) + " KiB " + r.String()
	}
	return pick(vpclmulMin).String()
}

// lastShift caches hybridShift's key for the last stream length, as
// length<<32 | key (0: none yet): a load sums pieces of a few sizes, and
// xPow costs about what summing 16 KiB in cache takes
// (docs/PERFORMANCE-NOTES.md, internal/crc32c).
var lastShift atomic.Uint64

// hybridShift is the key that moves a CRC n bytes along in updateHybrid:
// x^(8n−33) modulo the polynomial, as one carry-less multiply by it and a
// CRC32 instruction on the product multiply by x^(8n) (n ≥ 5). Lengths of
// 4 GiB or more (inputs of 32 GiB) are not cached.
func hybridShift(n int64) uint32 {
	if c := lastShift.Load(); c != 0 && int64(c>>32) == n {
		return uint32(c)
	}
	key := xPow(8*n - 33)
	if n < 1<<32 {
		lastShift.Store(uint64(n)<<32 | uint64(key))
	}
	return key
}
