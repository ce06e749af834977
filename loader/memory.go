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
