package crc32c

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// implementations are Update and each folding routine of this CPU, by
// name.
func implementations(t testing.TB) map[string]func(crc uint32, p []byte) uint32 {
	impls := map[string]func(uint32, []byte) uint32{"Update": Update}
	for name, fn := range routines() {
		impls[name] = fn
	}
	t.Logf("Update folds with %q; routines tested: %d", folding(), len(impls)-1)
	return impls
}

// benchImplementations are implementations and hash/crc32 itself, the
// peer of the benchmarks.
func benchImplementations(b *testing.B) map[string]func(crc uint32, p []byte) uint32 {
	impls := implementations(b)
	impls["hash-crc32"] = func(crc uint32, p []byte) uint32 { return crc32.Update(crc, table, p) }
	return impls
}

// TestUpdateMatchesHashCRC32 cross-checks Update and every folding
// routine the CPU has against hash/crc32 over lengths around every
// threshold and step of the folding code, at every alignment, from
// several CRCs so far.
func TestUpdateMatchesHashCRC32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 64<<10+64)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	std := crc32.MakeTable(crc32.Castagnoli)
	var lengths []int
	for n := 0; n <= 2100; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 4095, 4096, 4097, 4111, 4112, 8191, 12543, 12544, 12545, 12559, 12560, 12800, 65535, 65536)
	for name, update := range implementations(t) {
		for _, n := range lengths {
			for _, align := range []int{0, 1, 7, 15, 33, 63} {
				p := data[align : align+n]
				for _, crc := range []uint32{0, 0xffffffff, 0x12345678} {
					got, want := update(crc, p), crc32.Update(crc, std, p)
					require.Equal(t, want, got, "%s(%08x, %d bytes at alignment %d) = %08x, want %08x", name, crc, n, align, got, want)
				}
			}
		}
	}
}

// TestUpdateInPieces checks that summing a buffer in pieces of every size
// gives the CRC of the whole.
func TestUpdateInPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	for _, piece := range []int{1, 15, 16, 255, 256, 1000, 1024, 1040, 4096, 128 << 10, 1 << 20} {
		var crc uint32
		for p := data; len(p) > 0; {
			k := min(piece, len(p))
			crc = Update(crc, p[:k])
			p = p[k:]
		}
		assert.Equal(t, want, crc, "in pieces of %d: %08x, want %08x", piece, crc, want)
	}
}

// FuzzUpdate cross-checks Update and every folding routine of the CPU
// against hash/crc32 on any input.
func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 1024))
	f.Add(uint32(0xdeadbeef), make([]byte, 4111))
	std := crc32.MakeTable(crc32.Castagnoli)
	impls := implementations(f)
	f.Fuzz(func(t *testing.T, crc uint32, p []byte) {
		// Fuzzed inputs are short: repeated, they reach the folding code.
		long := p
		if len(p) > 0 {
			long = bytes.Repeat(p, 1+(2*vpclmulMin)/len(p))
		}
		for name, update := range impls {
			for _, q := range [][]byte{p, long} {
				got, want := update(crc, q), crc32.Update(crc, std, q)
				require.Equal(t, want, got, "%s(%08x, %d bytes, from %d repeated) = %08x, want %08x", name, crc, len(q), len(p), got, want)
			}
		}
	})
}

// BenchmarkUpdate sums bytes in cache. They are written first: untouched
// memory reads as the kernel's one shared zero page, and four CRC32
// streams whose addresses all map to the same physical lines ran at 13
// GB/s on AMD Zen 3 against 27-31 GB/s on written bytes.
func BenchmarkUpdate(b *testing.B) {
	impls := benchImplementations(b)
	for _, n := range []int{1 << 10, 2 << 10, 4 << 10, 16 << 10, 128 << 10, 1 << 20} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i * 7)
		}
		for name, update := range impls {
			b.Run(name+"/"+itoa(n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					update(0, p)
				}
			})
		}
	}
}

func itoa(n int) string {
	switch {
	case n >= 1<<20:
		return string(rune('0'+n>>20)) + "MiB"
	default:
		s := ""
		for k := n >> 10; k > 0; k /= 10 {
			s = string(rune('0'+k%10)) + s
		}
		return s + "KiB"
	}
}

// New's hash sums, appends and resets as hash/crc32's CRC-32C hash does,
// written in pieces of several sizes.
func TestNewMatchesHashCRC32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 1<<20+17)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, piece := range []int{1, 15, 256, 4096, 300000, len(data)} {
		got, want := New(), crc32.New(crc32.MakeTable(crc32.Castagnoli))
		for i := 0; i < 2; i++ { // the second pass after Reset
			got.Reset()
			want.Reset()
			for p := data; len(p) > 0; p = p[min(piece, len(p)):] {
				got.Write(p[:min(piece, len(p))])
				want.Write(p[:min(piece, len(p))])
			}
			g, w := got.Sum([]byte("x")), want.Sum([]byte("x"))
			require.True(t, bytes.Equal(g, w), "pieces of %d: Sum %x, Sum32 %08x; hash/crc32 gives %x, %08x", piece, g, got.Sum32(), w, want.Sum32())
			require.Equal(t, want.Sum32(), got.Sum32(), "pieces of %d: Sum %x, Sum32 %08x; hash/crc32 gives %x, %08x", piece, g, got.Sum32(), w, want.Sum32())
		}
		require.Equal(t, want.Size(), got.Size(), "Size %d, BlockSize %d; hash/crc32 gives %d, %d", got.Size(), got.BlockSize(), want.Size(), want.BlockSize())
		require.Equal(t, want.BlockSize(), got.BlockSize(), "Size %d, BlockSize %d; hash/crc32 gives %d, %d", got.Size(), got.BlockSize(), want.Size(), want.BlockSize())
	}
}
