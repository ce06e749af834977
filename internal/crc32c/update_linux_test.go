package crc32c

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Munmap(m)
	if Update(0, m) != Update(0, data) {
		b.Fatal("the mapping sums differently from the bytes written")
	}
	for name, update := range benchImplementations(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				update(0, m)
			}
		})
	}
}
