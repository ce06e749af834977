//go:build amd64 && !purego

package crc32c

import "hash/crc32"

// routines are the folding routines this CPU can run, each wrapped as
// Update wraps the one it picks, so that tests check all of them and not
// only the fastest (an AVX-512 CPU runs the 256-bit routine too).
func routines() map[string]func(crc uint32, p []byte) uint32 {
	wrap := func(fold func(uint32, []byte, *foldKeys) uint32) func(uint32, []byte) uint32 {
		return func(crc uint32, p []byte) uint32 {
			if len(p) >= vpclmulMin {
				n := len(p) &^ 15
				crc, p = ^fold(^crc, p[:n], &keys), p[n:]
			}
			return crc32.Update(crc, table, p)
		}
	}
	r := map[string]func(uint32, []byte) uint32{}
	if canFold512 {
		r["AVX-512"] = wrap(updateVPCLMUL)
	}
	if canFold256 {
		r["AVX2"] = wrap(updateVPCLMUL256)
		r["hybrid"] = func(crc uint32, p []byte) uint32 {
			if len(p) >= 512 {
				var c uint32
				c, p = hybrid(^crc, p)
				crc = ^c
			}
			return crc32.Update(crc, table, p)
		}
	}
	return r
}
