package rdmafs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkFirstSum is what a READ with a cold digest cache costs the
// server beyond the send: one pass of CRC32C over file bytes that sit in
// the page cache, 1 MiB digest block by block, each of the two ways the
// CPU can reach them. scripts/bench-rdmafs.sh prints the cheaper beside
// its cold-read figures.
//
//   - pread: copied into a buffer a crcPiece at a time and summed there,
//     as preadCRC does;
//   - mmap: mapped, its page table filled at once (MADV_POPULATE_READ),
//     summed in place and unmapped.
func BenchmarkFirstSum(b *testing.B) {
	const n = 256 << 20
	path := filepath.Join(b.TempDir(), "data")
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(b, os.WriteFile(path, data, 0o600)) // in the page cache
	want := crc32c(0, data)
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	fd := int(f.Fd())
	b.Run("pread", func(b *testing.B) {
		buf := make([]byte, crcPiece)
		b.SetBytes(n)
		for b.Loop() {
			var crc uint32
			for off := 0; off < n; off += len(buf) {
				k, err := unix.Pread(fd, buf, int64(off))
				if err != nil || k != len(buf) {
					b.Fatalf("pread at %d: %d bytes, %v", off, k, err)
				}
				crc = crc32c(crc, buf)
			}
			require.Equal(b, want, crc)
		}
	})
	b.Run("mmap", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			var crc uint32
			for off := 0; off < n; off += digestBlock {
				m, err := unix.Mmap(fd, int64(off), digestBlock, unix.PROT_READ, unix.MAP_SHARED)
				require.NoError(b, err)
				if err := unix.Madvise(m, unix.MADV_POPULATE_READ); err != nil {
					b.Skipf("MADV_POPULATE_READ: %v (Linux 5.14 or later)", err)
				}
				crc = crc32c(crc, m)
				require.NoError(b, unix.Munmap(m))
			}
			require.Equal(b, want, crc)
		}
	})
}
