package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxHeaderSize is the largest header length N accepted, the limit of the
// reference implementation. It bounds the memory ParseHeader allocates.
const MaxHeaderSize = 100_000_000

// Header is the validated header of a safetensors file.
type Header struct {
	// Metadata is the "__metadata__" object; nil when the file has none.
	Metadata map[string]string
	// Tensors are sorted by Begin (then End, then Name); they tile the data
	// region [0, DataLen) without gaps or overlaps.
	Tensors []TensorInfo
	// DataOffset is the file offset of the data region: 8 + N.
	DataOffset int64
	// DataLen is the length of the data region, which ends at end of file.
	DataLen int64
}

// TensorInfo describes one tensor. Begin and End are relative to the start of
// the data region; its bytes are at file offsets
// [DataOffset+Begin, DataOffset+End).
type TensorInfo struct {
	Name  string
	Dtype string
	Shape []int64
	Begin int64
	End   int64
}

// Bytes returns the size of the tensor's data in bytes.
func (t TensorInfo) Bytes() int64 { return t.End - t.Begin }

// Elements returns the number of elements: the product of Shape, 1 for a
// scalar. It does not overflow for tensors of a validated Header.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// FileSize returns the size of the file the header was parsed from.
func (h *Header) FileSize() int64 { return h.DataOffset + h.DataLen }

// Tensor returns the tensor called name, and false if there is none.
func (h *Header) Tensor(name string) (TensorInfo, bool) {
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// ParseHeader reads and validates the header of a safetensors file of size
// bytes readable through r. It reads only the 8-byte length and the header
// itself, allocating at most MaxHeaderSize bytes plus the decoded header,
// and checks everything the reference implementation checks: header bounds,
// UTF-8, JSON shape, known dtypes, sizes with overflow checks, contiguous
// offsets from 0 and a data region that ends exactly at size. Failures are
// *Error values wrapping one Err* sentinel; Path is empty (Open fills it).
// ParseHeader is safe for concurrent use if r is.
func ParseHeader(r io.ReaderAt, size int64) (*Header, error) {
	if size < 8 {
		return nil, &Error{Offset: 0, Kind: ErrHeaderTruncated,
			Detail: fmt.Sprintf("file is %d bytes, the header length alone takes 8", size)}
	}
	var lenBuf [8]byte
	if err := readFull(r, lenBuf[:], 0); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, &Error{Offset: 0, Kind: ErrHeaderTooLarge,
			Detail: fmt.Sprintf("header length is %d", n)}
	}
	if int64(n) > size-8 {
		return nil, &Error{Offset: 0, Kind: ErrHeaderTruncated,
			Detail: fmt.Sprintf("header length %d needs a file of at least %d bytes, file is %d", n, 8+n, size)}
	}
	buf := make([]byte, n)
	if err := readFull(r, buf, 8); err != nil {
		return nil, err
	}
	if !utf8.Valid(buf) {
		return nil, &Error{Offset: 8 + int64(firstInvalidUTF8(buf)), Kind: ErrInvalidUTF8}
	}
	if at := loneSurrogate(buf); at >= 0 {
		return nil, &Error{Offset: 8 + int64(at), Kind: ErrInvalidJSON, Detail: "\\u escape of an unpaired UTF-16 surrogate"}
	}
	meta, raw, err := decodeHeader(buf)
	if err != nil {
		return nil, err
	}
	dataOffset := 8 + int64(n)
	tensors, err := validate(raw, size-dataOffset)
	if err != nil {
		return nil, err
	}
	return &Header{Metadata: meta, Tensors: tensors, DataOffset: dataOffset, DataLen: size - dataOffset}, nil
}

// readFull reads len(p) bytes at off, treating a short read as truncation.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == io.EOF || err == nil {
		return &Error{Offset: off + int64(n), Kind: ErrHeaderTruncated,
			Detail: fmt.Sprintf("read %d of %d header bytes before end of file", n, len(p)), Err: io.ErrUnexpectedEOF}
	}
	return &Error{Offset: off + int64(n), Kind: ErrRead, Err: err}
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && w <= 1 {
			return i
		}
		i += w
	}
	return len(b)
}
