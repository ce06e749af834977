package crc32c

// Folding: the CRC of a long input is computed 64 bytes per step by
// carry-less multiplication (Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction", 2009), as hash/crc32 does for
// the IEEE polynomial, here 4 × 64 bytes in flight: each 128-bit lane x of
// the running remainder moves D bits further along the input by
//
//	x' = lo64(x) · K(D+32)  ⊕  hi64(x) · K(D−32)
//
// and is added to the input there. K(n) is x^n mod P in the reflected bit
// order, shifted left by one (the reflected product is one bit short). What
// is left after the last fold is a 128-bit value with the same remainder
// as the whole input: two CRC32 instructions on it give the CRC.

// vpclmulMin is the shortest input folded: below it hash/crc32's
// three-way CRC32 instruction loop is about as fast, and the vector unit
// is not worth waking.
const vpclmulMin = 1024

// foldKeys holds K(D+32), K(D−32) for each fold distance D, in the order
// crc32c_amd64.s loads them.
type foldKeys struct {
	by2048 [2]uint64 // the main loop: 4 registers of 512 bits
	by512  [2]uint64 // one 512-bit register into the next
	by128  [2]uint64 // one 128-bit lane into the next
	by256  [2]uint64 // one 256-bit register into the next (updateVPCLMUL256)
}

func newFoldKeys() foldKeys {
	k := func(bits int64) [2]uint64 { return [2]uint64{foldKey(bits + 32), foldKey(bits - 32)} }
	return foldKeys{by2048: k(2048), by512: k(512), by128: k(128), by256: k(256)}
}

// foldKey is K(n) for n a multiple of 8.
func foldKey(n int64) uint64 { return uint64(xPow8n(n/8)) << 1 }
