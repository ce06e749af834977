package loader

import "unsafe"

// alignedSlice returns a Go-heap slice of n bytes whose first byte is
// aligned to align (a power of two).
func alignedSlice(n, align int) []byte {
	raw := make([]byte, n+align)
	off := 0
	if rem := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & uintptr(align-1)); rem != 0 {
		off = align - rem
	}
	return raw[off : off+n : off+n]
}

// AlignedBuffer returns a garbage-collected buffer of n bytes whose first
// byte is page aligned, so O_DIRECT reads land in it without a bounce copy.
// For buffers kept for a long time and reused, prefer AllocHost.
func AlignedBuffer(n int) []byte { return alignedSlice(n, 4096) }
