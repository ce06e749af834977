package checkpoint

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrView reports a tensor that cannot be viewed as the Go type asked:
// another dtype, bytes not aligned for the type, memory the host cannot
// read (a GPU), or a big-endian host.
var ErrView = errors.New("tensor cannot be viewed as that type")

// Element is a Go type a tensor's bytes can be viewed as.
type Element interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64 | float32 | float64
}

// viewTypes maps each dtype to the Go type of its elements; F16, BF16 and
// the 8-bit float types are viewed as their raw bits; C64 and the packed
// sub-byte types have no Go element type.
var viewTypes = map[string]string{
	"BOOL": "uint8", "U8": "uint8", "I8": "int8",
	"F8_E4M3": "uint8", "F8_E5M2": "uint8", "F8_E8M0": "uint8", "F8_E4M3FNUZ": "uint8", "F8_E5M2FNUZ": "uint8",
	"I16": "int16", "U16": "uint16", "F16": "uint16", "BF16": "uint16",
	"I32": "int32", "U32": "uint32", "F32": "float32",
	"I64": "int64", "U64": "uint64", "F64": "float64",
}

// View returns the elements of the tensor called name as a []T over the
// loaded bytes, without a copy, valid until l.Close. It refuses, with an
// error wrapping ErrView, a T that is not the dtype's element type (F32 is
// float32; F16 and BF16 are uint16 raw bits; BOOL is uint8), bytes whose
// address is not aligned for T (loads place every tensor at its file
// offset modulo the I/O alignment, and safetensors files align tensors to
// their element size, so this holds for well-formed files), device memory,
// and big-endian hosts (safetensors stores little-endian).
func View[T Element](l *Loaded, name string) ([]T, error) {
	t, ok := l.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	var zero T
	want := fmt.Sprintf("%T", zero)
	if viewTypes[t.Dtype] != want {
		return nil, fmt.Errorf("tensor %q is %s %v: %w %s; view it as %s", name, t.Dtype, t.Shape, ErrView, want, typeOrNone(viewTypes[t.Dtype]))
	}
	if !littleEndian() {
		return nil, fmt.Errorf("tensor %q: %w %s: this host is big-endian and safetensors stores little-endian bytes", name, ErrView, want)
	}
	b := l.Bytes(name)
	if b == nil {
		return nil, fmt.Errorf("tensor %q: %w %s: its allocation is not host memory (or was freed); copy it back first", name, ErrView, want)
	}
	size := int(unsafe.Sizeof(zero))
	if len(b) == 0 {
		return []T{}, nil
	}
	if addr := uintptr(unsafe.Pointer(&b[0])); addr%uintptr(size) != 0 {
		return nil, fmt.Errorf("tensor %q: %w %s: its bytes start at an address not aligned to %d bytes (the file places it at an unaligned offset)", name, ErrView, want, size)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size), nil
}

func typeOrNone(s string) string {
	if s == "" {
		return "raw bytes (Loaded.Bytes): no Go type holds it"
	}
	return s
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
