package crc32c

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkUpdateMapped sums a file through a read-only mapping of its
// page cache, as the iterator sums a mapped shard: 4 KiB pages, more than
// the CPU's caches and TLBs hold, so every page costs a page walk.
func BenchmarkUpdateMapped(b *testing.B) {
	const n = 256 << 20
	path := filepath.Join(b.TempDir(), "data")
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(b, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	require.NoError(b, err)
	defer syscall.Munmap(m)
	require.Equal(b, Update(0, data), Update(0, m), "the mapping sums differently from the bytes written")
	for name, update := range benchImplementations(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				update(0, m)
			}
		})
	}
}
