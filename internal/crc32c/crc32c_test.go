package crc32c

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, tc := range []struct{ lenA, lenB int }{
		{0, 0}, {0, 1}, {1, 0}, {1, 1}, {3, 5}, {4096, 1}, {1, 4096},
		{1 << 20, 1 << 20}, {12345, 1 << 20}, {1<<20 + 7, 2<<20 - 3},
	} {
		a, b := data[:tc.lenA], data[tc.lenA:tc.lenA+tc.lenB]
		want := Checksum(data[:tc.lenA+tc.lenB])
		got := Combine(Checksum(a), Checksum(b), int64(len(b)))
		assert.Equal(t, want, got, "Combine(%d, %d) = %08x, want %08x", tc.lenA, tc.lenB, got, want)
	}
	got, want := Update(Checksum([]byte("hello, ")), []byte("world")), Checksum([]byte("hello, world"))
	assert.Equal(t, want, got, "Update = %08x, want %08x", got, want)
}

// FuzzCombine cross-checks the combination of two CRCs against the CRC of
// the concatenation.
func FuzzCombine(f *testing.F) {
	f.Add([]byte("hello, "), []byte("world"))
	f.Add([]byte{}, []byte{0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := Checksum(append(append([]byte(nil), a...), b...))
		got := Combine(Checksum(a), Checksum(b), int64(len(b)))
		require.Equal(t, want, got, "Combine = %08x, want %08x", got, want)
	})
}
