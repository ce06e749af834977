// Package crc32c is CRC-32C (Castagnoli) as gdsload uses it on the wire and
// for staged files and shards: an update that folds with VPCLMULQDQ where the
// CPU has it (AVX-512, or 256-bit registers without it) and is hash/crc32's
// elsewhere, a hash.Hash32 over it, and the
// combination of two CRCs into the CRC of the concatenated bytes, so that
// bytes summed once need not be read again.
package crc32c

import (
	"hash"
	"hash/crc32"
)

// table is read-only after package initialization.
var table = crc32.MakeTable(crc32.Castagnoli)

// Table is the Castagnoli table, for hash/crc32's functions.
func Table() *crc32.Table { return table }

// Update extends crc with p: on amd64 with VPCLMULQDQ by folding (fold.go);
// elsewhere, and for short inputs, with hash/crc32. With AVX-512 folding
// is several times as fast as hash/crc32 in cache. With 256-bit registers
// only (AMD Zen 3) folding alone is about as fast as hash/crc32 in cache,
// so inputs of 16 KiB or more are summed as five parts at once, half
// folded and half in four CRC32 instruction streams (updateHybrid): faster
// in cache (BenchmarkUpdate), and on bytes from memory the five streams
// overlap their misses and page walks (BenchmarkUpdateMapped), which is
// where gdsload sums (shards, and rdmafs segments as they arrive). The
// figures are in docs/PERFORMANCE-NOTES.md, internal/crc32c.
func Update(crc uint32, p []byte) uint32 {
	crc, p = updateFast(crc, p)
	return crc32.Update(crc, table, p)
}

// Checksum is the CRC-32C of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Combine returns the CRC-32C of A‖B from crcA, the CRC-32C of A, and
// crcB, that of B, which is lenB bytes long: zlib's crc32_combine for the
// Castagnoli polynomial. It costs a few dozen carry-less steps, whatever
// lenB is.
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(xPow8n(lenB), crcA) ^ crcB
}

// reversed is the Castagnoli polynomial, bit-reversed, as the reflected CRC
// uses it.
const reversed = 0x82f63b78

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
			b = b>>1 ^ reversed
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
func xPow8n(n int64) uint32 { return xPow(8 * n) }

// xPow returns x^m modulo the polynomial.
func xPow(m int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 0; m != 0; k++ {
		if m&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
		m >>= 1
	}
	return p
}

// New returns a hash.Hash32 of the CRC-32C that sums with Update (so by
// folding where the CPU allows): a drop-in for hash/crc32's
// crc32.New(crc32.MakeTable(crc32.Castagnoli)), Sum big-endian as there.
func New() hash.Hash32 { return new(digest) }

type digest struct{ crc uint32 }

func (d *digest) Write(p []byte) (int, error) {
	d.crc = Update(d.crc, p)
	return len(p), nil
}

func (d *digest) Sum32() uint32 { return d.crc }

func (d *digest) Sum(b []byte) []byte {
	return append(b, byte(d.crc>>24), byte(d.crc>>16), byte(d.crc>>8), byte(d.crc))
}

func (d *digest) Reset()         { d.crc = 0 }
func (d *digest) Size() int      { return crc32.Size }
func (d *digest) BlockSize() int { return 1 }
