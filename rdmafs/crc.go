package rdmafs

import "hash/crc32"

// castagnoli is read-only after package initialization.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c extends crc with p (CRC-32C, Castagnoli; hardware-accelerated on
// amd64 and arm64).
func crc32c(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// crc32cCombine returns the CRC-32C of A‖B from crcA, the CRC-32C of A,
// and crcB, that of B, which is lenB bytes long: zlib's crc32_combine for
// the Castagnoli polynomial. It costs a few dozen carry-less steps,
// whatever lenB is.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(xPow8n(lenB), crcA) ^ crcB
}

// castagnoliReversed is the Castagnoli polynomial, bit-reversed, as the
// reflected CRC uses it.
const castagnoliReversed = 0x82f63b78

// multModP multiplies a and b modulo the polynomial, in the reflected bit
// order (bit 31 is x^0).
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
}

// x2nTable[k] is x^(2^k) modulo the polynomial; read-only after package
// initialization.
var x2nTable = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// xPow8n returns x^(8n) modulo the polynomial: the operator that appends n
// zero bytes to a CRC.
func xPow8n(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; k++ {
		if n&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
		n >>= 1
	}
	return p
}
