//go:build amd64 && !purego

package crc32c

import "golang.org/x/sys/cpu"

// useVPCLMUL says whether this CPU, and its OS (which must save the AVX-512
// registers), can run updateVPCLMUL. Read-only after package
// initialization.
var useVPCLMUL = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42

// keys are the folding constants of updateVPCLMUL; read-only after package
// initialization.
var keys = newFoldKeys()

// updateVPCLMUL extends the non-inverted CRC-32C crc with p, whose length
// is at least 256 and a multiple of 16 (crc32c_amd64.s).
//
//go:noescape
func updateVPCLMUL(crc uint32, p []byte, k *foldKeys) uint32

// updateFast extends crc with the longest prefix of p it can sum faster
// than hash/crc32 and returns the rest of p.
func updateFast(crc uint32, p []byte) (uint32, []byte) {
	if !useVPCLMUL || len(p) < vpclmulMin {
		return crc, p
	}
	n := len(p) &^ 15
	return ^updateVPCLMUL(^crc, p[:n], &keys), p[n:]
}

func foldingAvailable() bool { return useVPCLMUL }
