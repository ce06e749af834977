package loader

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// hugePageThreshold is the size from which host buffers ask for huge pages:
// fewer TLB misses and fewer first-touch faults on multi-MiB buffers.
const hugePageThreshold = 2 << 20

// AllocHost returns n bytes of page-aligned, pre-touched anonymous memory
// outside the Go heap, with MADV_HUGEPAGE for large sizes. Direct reads land
// in it without a bounce copy. Release it with FreeHost; it is never
// garbage-collected.
func AllocHost(n int) ([]byte, error) {
	b, err := allocHostUntouched(n)
	if err != nil {
		return nil, err
	}
	prefault(b)
	return b, nil
}

// allocHostUntouched is AllocHost without the pre-touch: the caller
// touches the memory (prefault) before it uses it.
func allocHostUntouched(n int) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocating %d bytes of host memory: %w", n, err)
	}
	if n >= hugePageThreshold {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // advice only: fine where THP is off
	}
	return b, nil
}

// FreeHost releases memory from AllocHost.
func FreeHost(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	return unix.Munmap(b[:cap(b)])
}

// prefault touches one byte per page so the first load does not pay the
// page faults, which on a VM can take seconds for a few GiB
// (docs/PERFORMANCE-NOTES.md, loader).
func prefault(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}
