package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/gdsload/gdsload/internal/regular"
	"io"
	"math"
	"unicode/utf8"
)

// Magic starts every .npy file.
const Magic = "\x93NUMPY"

// MaxHeaderSize caps the header length ParseHeader accepts, and so the
// memory it allocates. numpy writes headers of well under a kilobyte for
// plain arrays.
const MaxHeaderSize = 1 << 20

// Header is the validated header of a .npy file.
type Header struct {
	// Version is the format version: {1, 0}, {2, 0} or {3, 0}.
	Version [2]byte
	// Descr is the dtype descr as written, e.g. "<f4"; Dtype is it parsed.
	Descr string
	Dtype Dtype
	// FortranOrder reports column-major data.
	FortranOrder bool
	// Shape is the array shape; empty for a 0-d array (one element).
	Shape []int64
	// DataOffset is the file offset of the data; DataLen its length, which
	// is elements × item size and runs to end of file.
	DataOffset int64
	DataLen    int64
}

// Elements returns the number of elements: the product of Shape, 1 for a
// 0-d array. It does not overflow for a validated Header.
func (h *Header) Elements() int64 {
	n := int64(1)
	for _, d := range h.Shape {
		n *= d
	}
	return n
}

// ParseHeader reads and validates the header of a .npy file of size bytes
// readable through r: magic, a supported version, a header length at most
// MaxHeaderSize (checked before allocating), the dict literal with exactly
// the keys descr, fortran_order and shape, a supported plain dtype, an
// element count that does not overflow, and data that runs exactly to size.
// It reads only the header. Failures are *Error values wrapping one Err*
// sentinel; Path is empty (ParseFile fills it). It is safe for concurrent
// use if r is.
func ParseHeader(r io.ReaderAt, size int64) (*Header, error) {
	var pre [12]byte
	n, err := r.ReadAt(pre[:min(int64(len(pre)), max(size, 0))], 0)
	if err != nil && err != io.EOF {
		return nil, &Error{Offset: int64(n), Kind: ErrRead, Err: err}
	}
	if n < 6 || string(pre[:6]) != Magic {
		return nil, &Error{Offset: 0, Kind: ErrNotNPY, Detail: fmt.Sprintf("file starts with %q", pre[:min(n, 6)])}
	}
	if n < 10 {
		return nil, &Error{Offset: int64(n), Kind: ErrHeaderTruncated, Detail: fmt.Sprintf("file is %d bytes, ends inside the version or header length", n)}
	}
	h := &Header{Version: [2]byte{pre[6], pre[7]}}
	var hlen, start int64
	switch h.Version {
	case [2]byte{1, 0}:
		hlen, start = int64(binary.LittleEndian.Uint16(pre[8:])), 10
	case [2]byte{2, 0}, [2]byte{3, 0}:
		if n < 12 {
			return nil, &Error{Offset: int64(n), Kind: ErrHeaderTruncated, Detail: "file ends inside the header length"}
		}
		hlen, start = int64(binary.LittleEndian.Uint32(pre[8:])), 12
	default:
		return nil, &Error{Offset: 6, Kind: ErrVersion, Detail: fmt.Sprintf("version %d.%d; supported are 1.0, 2.0, 3.0", pre[6], pre[7])}
	}
	if hlen > MaxHeaderSize {
		return nil, &Error{Offset: 8, Kind: ErrHeaderTooLarge, Detail: fmt.Sprintf("header length %d, cap %d", hlen, MaxHeaderSize)}
	}
	if hlen > size-start {
		return nil, &Error{Offset: 8, Kind: ErrHeaderTruncated, Detail: fmt.Sprintf("header length %d needs %d bytes, file is %d", hlen, start+hlen, size)}
	}
	buf := make([]byte, hlen)
	if k, err := r.ReadAt(buf, start); k < len(buf) {
		if err == nil || err == io.EOF {
			return nil, &Error{Offset: start + int64(k), Kind: ErrHeaderTruncated, Detail: "file ended inside the header", Err: io.ErrUnexpectedEOF}
		}
		return nil, &Error{Offset: start + int64(k), Kind: ErrRead, Err: err}
	}
	if h.Version[0] == 3 && !utf8.Valid(buf) {
		return nil, &Error{Offset: start, Kind: ErrHeaderEncoding}
	}
	if err := h.interpret(buf, start); err != nil {
		return nil, err
	}
	h.DataOffset = start + hlen
	count := int64(1)
	for _, d := range h.Shape {
		if d != 0 && count > math.MaxInt64/d {
			return nil, &Error{Offset: start, Kind: ErrShapeOverflow, Detail: fmt.Sprintf("shape %v", h.Shape)}
		}
		count *= d
	}
	if count > math.MaxInt64/h.Dtype.ItemSize {
		return nil, &Error{Offset: start, Kind: ErrShapeOverflow, Detail: fmt.Sprintf("%d elements of %d bytes", count, h.Dtype.ItemSize)}
	}
	h.DataLen = count * h.Dtype.ItemSize
	if h.DataLen != size-h.DataOffset {
		return nil, &Error{Offset: h.DataOffset, Kind: ErrDataLength,
			Detail: fmt.Sprintf("%s%v needs %d data bytes, the file has %d after the header", h.Descr, h.Shape, h.DataLen, size-h.DataOffset)}
	}
	return h, nil
}

// interpret parses the header dict text and fills Descr, Dtype,
// FortranOrder and Shape; start is the text's file offset.
func (h *Header) interpret(text []byte, start int64) error {
	entries, lerr := parseDict(string(text))
	if lerr != nil {
		return &Error{Offset: start + int64(lerr.at), Kind: lerr.kind, Detail: lerr.msg}
	}
	decode := func(s string) string {
		if h.Version[0] < 3 {
			return latin1(s)
		}
		return s
	}
	var have [3]bool
	for _, e := range entries {
		at := start + int64(e.at)
		typeErr := func(want string) error {
			return &Error{Offset: at, Kind: ErrFieldType, Detail: fmt.Sprintf("%q is %v, want %s", e.key, e.val.kind, want)}
		}
		switch decode(e.key) {
		case "descr":
			have[0] = true
			switch e.val.kind {
			case pyList:
				return &Error{Offset: at, Kind: ErrStructuredDtype, Detail: "descr is a list of fields"}
			case pyStr:
			default:
				return typeErr("a string")
			}
			h.Descr = decode(e.val.str)
			d, err := ParseDescr(h.Descr)
			if err != nil {
				err.(*Error).Offset = at
				return err
			}
			h.Dtype = d
		case "fortran_order":
			have[1] = true
			if e.val.kind != pyBool {
				return typeErr("True or False")
			}
			h.FortranOrder = e.val.b
		case "shape":
			have[2] = true
			if e.val.kind != pyTuple {
				return typeErr("a tuple of ints")
			}
			h.Shape = make([]int64, len(e.val.items))
			for i, v := range e.val.items {
				if v.kind != pyInt {
					return typeErr("a tuple of ints")
				}
				if v.i < 0 {
					return &Error{Offset: at, Kind: ErrInvalidShape, Detail: fmt.Sprintf("dimension %d is %d", i, v.i)}
				}
				h.Shape[i] = v.i
			}
		default:
			return &Error{Offset: at, Kind: ErrUnknownKey, Detail: fmt.Sprintf("key %q; allowed are descr, fortran_order, shape", decode(e.key))}
		}
	}
	for i, k := range []string{"descr", "fortran_order", "shape"} {
		if !have[i] {
			return &Error{Offset: start, Kind: ErrMissingKey, Detail: fmt.Sprintf("no %q", k)}
		}
	}
	return nil
}

// latin1 decodes ISO-8859-1 bytes, the encoding of version 1 and 2 headers.
func latin1(s string) string {
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// ParseFile opens the file at path and parses its header with ParseHeader;
// failures name path.
func ParseFile(path string) (*Header, error) {
	f, fi, err := regular.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Offset: -1, Kind: ErrRead, Err: err}
	}
	defer f.Close()
	h, err := ParseHeader(f, fi.Size())
	if err != nil {
		err.(*Error).Path = path
		return nil, err
	}
	return h, nil
}
