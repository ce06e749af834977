package iterator

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms
// gdsload runs on (x86-64, arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// shardBuffer returns a garbage-collected buffer of n bytes for a whole
// shard, page aligned (O_DIRECT reads land in it). Buffers of several huge
// pages are aligned to one and advised MADV_HUGEPAGE before anything
// touches them: the first pass over a fresh 60 MiB buffer then takes 30
// faults instead of 15,000, which on a VM cost more than decompressing
// incompressible data (docs/PERFORMANCE-NOTES.md, shards/iterator).
// Advice only: where THP is off nothing changes.
func shardBuffer(n int) []byte {
	if n < 4*hugePage {
		return pageAligned(n, 4096)
	}
	b := pageAligned(n, hugePage)
	_ = unix.Madvise(b[:n/hugePage*hugePage], unix.MADV_HUGEPAGE)
	return b
}

// pageAligned returns a Go-heap slice of n bytes whose first byte is
// aligned to align (a power of two).
func pageAligned(n, align int) []byte {
	raw := make([]byte, n+align)
	off := 0
	if rem := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & uintptr(align-1)); rem != 0 {
		off = align - rem
	}
	return raw[off : off+n : off+n]
}
