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
	// Descr is the dtype descr as written: the string ("<f4"), or the
	// literal's text for a list of fields or a (dtype, shape) tuple.
	// Dtype is what numpy makes of it: for a subarray descr, the element
	// dtype (numpy reads the subarrays' elements into Shape).
	Descr string
	Dtype Dtype
	// FortranOrder reports column-major data.
	FortranOrder bool
	// Shape is the array shape as numpy.load gives it (a dimension written
	// as -1 is worked out from the data's length); empty for a 0-d array.
	Shape []int64
	// DataOffset is the file offset of the data; DataLen its length:
	// elements × item size.
	DataOffset int64
	DataLen    int64
	// Trailing counts the bytes after the data, which numpy.load ignores
	// (two arrays saved one after the other in one file, say).
	Trailing int64
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
// readable through r, accepting every header numpy.load (numpy 1.24, with
// allow_pickle=False) accepts and refusing the rest, object arrays
// included: magic, version 1.0, 2.0 or 3.0, a header length at most
// MaxHeaderSize (checked before allocating), the header text (Latin-1 for
// versions 1 and 2, UTF-8 for 3) evaluated as Python's ast.literal_eval
// does after numpy drops Python 2's "L" suffixes from version 1 and 2
// headers, a dict whose keys are exactly descr, fortran_order and shape
// (in any order, a repeated key keeping its last value), a shape of ints,
// fortran_order True or False, a descr numpy.dtype accepts (see
// ParseDescr; lists of fields and (dtype, shape) tuples as
// numpy.lib.format.descr_to_dtype reads them), and data that fill the
// shape: numpy reads elements × item size bytes (all whole items for a
// dimension of -1) and ignores what follows (Trailing). Exceptions:
// \N{name} escapes in header strings, (base, new) union dtypes, dtype
// metadata dicts and sets of several fields as a descr are refused.
//
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
	h.DataOffset = start + hlen
	if err := h.interpret(buf, start, size-h.DataOffset); err != nil {
		return nil, err
	}
	return h, nil
}

// interpret evaluates the header text raw (at file offset start) as
// numpy.lib.format._read_array_header and read_array do, for avail data
// bytes, and fills h.
func (h *Header) interpret(raw []byte, start, avail int64) error {
	text := string(raw)
	offset := func(at int) int64 { return start + int64(at) }
	if h.Version[0] < 3 {
		text = latin1(text)
		offset = func(at int) int64 { return start + int64(utf8.RuneCountInString(text[:min(at, len(text))])) }
	}
	v, lerr := evalLiteral(text, h.Version[0] < 3)
	if lerr != nil {
		return &Error{Offset: offset(lerr.at), Kind: lerr.kind, Detail: lerr.msg}
	}
	if v.kind != pyDict {
		return &Error{Offset: offset(v.at), Kind: ErrHeaderSyntax, Detail: fmt.Sprintf("header is %v, not a dict", v.kind)}
	}
	var descr, order, shape *pyValue
	for i, k := range v.keys {
		if k.kind != pyStr {
			return &Error{Offset: offset(k.at), Kind: ErrUnknownKey, Detail: fmt.Sprintf("key is %v; allowed are descr, fortran_order, shape", k.kind)}
		}
		switch k.str {
		case "descr":
			descr = &v.items[i]
		case "fortran_order":
			order = &v.items[i]
		case "shape":
			shape = &v.items[i]
		default:
			return &Error{Offset: offset(k.at), Kind: ErrUnknownKey, Detail: fmt.Sprintf("key %q; allowed are descr, fortran_order, shape", k.str)}
		}
	}
	for _, m := range []struct {
		v    *pyValue
		name string
	}{{descr, "descr"}, {order, "fortran_order"}, {shape, "shape"}} {
		if m.v == nil {
			return &Error{Offset: start, Kind: ErrMissingKey, Detail: fmt.Sprintf("no %q", m.name)}
		}
	}
	// numpy checks the shape, then fortran_order, then the descr.
	if shape.kind != pyTuple {
		return &Error{Offset: offset(shape.at), Kind: ErrFieldType, Detail: fmt.Sprintf("shape is %v, want a tuple of ints", shape.kind)}
	}
	dims := make([]int64, len(shape.items))
	for i, d := range shape.items {
		switch d.kind {
		case pyInt:
			dims[i] = d.i
		case pyBigInt:
			return &Error{Offset: offset(d.at), Kind: ErrShapeOverflow, Detail: fmt.Sprintf("dimension %d does not fit in 64 bits", i)}
		default:
			return &Error{Offset: offset(d.at), Kind: ErrFieldType, Detail: fmt.Sprintf("shape dimension %d is %v, want an int", i, d.kind)}
		}
	}
	if order.kind != pyBool {
		return &Error{Offset: offset(order.at), Kind: ErrFieldType, Detail: fmt.Sprintf("fortran_order is %v, want True or False", order.kind)}
	}
	h.FortranOrder = order.i == 1
	h.Descr = text[descr.at:descr.end]
	if descr.kind == pyStr {
		h.Descr = descr.str
	}
	d, sub, err := descrDtype(*descr, 0)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Offset = offset(descr.at)
		}
		return err
	}
	if d.hasObject() {
		return &Error{Offset: offset(descr.at), Kind: ErrObjectDtype, Detail: fmt.Sprintf("descr %s", h.Descr)}
	}
	h.Dtype = d
	return h.fill(dims, sub, avail, offset(shape.at))
}

// fill works out the shape and data length as numpy.load does: it reads
// prod(dims) items of the descr's dtype (a subarray of sub elements each),
// or all whole items there are when that product is negative, and reshapes
// their elements to dims, where one negative dimension is worked out.
func (h *Header) fill(dims, sub []int64, avail, at int64) error {
	shapeErr := func(kind error, format string, args ...any) error {
		return &Error{Offset: at, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	}
	if len(dims) > maxDims {
		return shapeErr(ErrInvalidShape, "%d dimensions, numpy allows %d", len(dims), maxDims)
	}
	subElems := int64(1)
	for _, n := range sub {
		subElems *= n // bounded: a subarray is at most 2^31 bytes and items
	}
	itemSize := h.Dtype.ItemSize * subElems
	count := int64(1)
	for _, n := range dims {
		count *= n // wraps as numpy's int64 product does; checked below
	}
	var items int64
	if count < 0 {
		if itemSize == 0 {
			return shapeErr(ErrInvalidShape, "shape %v: a dimension to work out from the data needs items of a size", dims)
		}
		items = avail / itemSize
	} else {
		items = count
		if itemSize > 0 && items > avail/itemSize {
			return &Error{Offset: h.DataOffset, Kind: ErrDataLength,
				Detail: fmt.Sprintf("%s%v needs %d items of %d bytes, the file has %d bytes after the header", h.Descr, dims, items, itemSize, avail)}
		}
	}
	elems, ok := mulNonNeg(items, subElems)
	if !ok {
		return shapeErr(ErrShapeOverflow, "%d items of %d elements", items, subElems)
	}
	unknown := -1
	known := int64(1)
	for i, n := range dims {
		if n < 0 {
			if unknown >= 0 {
				return shapeErr(ErrInvalidShape, "shape %v: only one dimension can be worked out from the data", dims)
			}
			unknown = i
			continue
		}
		if known, ok = mulNonNeg(known, n); !ok {
			return shapeErr(ErrShapeOverflow, "shape %v", dims)
		}
	}
	shape := append([]int64{}, dims...)
	switch {
	case unknown >= 0 && (known == 0 || elems%known != 0):
		return &Error{Offset: h.DataOffset, Kind: ErrDataLength,
			Detail: fmt.Sprintf("%d elements in the data do not fill shape %v", elems, dims)}
	case unknown >= 0:
		shape[unknown] = elems / known
	case known != elems:
		return &Error{Offset: h.DataOffset, Kind: ErrDataLength,
			Detail: fmt.Sprintf("%s%v: the data holds %d elements, the shape %d", h.Descr, dims, elems, known)}
	}
	// numpy refuses arrays whose dimensions (zeros aside) and item size
	// multiply beyond 64 bits.
	bytes := max(h.Dtype.ItemSize, 1)
	for _, n := range shape {
		if n == 0 {
			continue
		}
		if bytes, ok = mulNonNeg(bytes, n); !ok {
			return shapeErr(ErrShapeOverflow, "shape %v of %d-byte items", shape, h.Dtype.ItemSize)
		}
	}
	h.Shape = shape
	h.DataLen = items * itemSize
	h.Trailing = avail - h.DataLen
	return nil
}

// mulNonNeg multiplies non-negative a and b, reporting overflow.
func mulNonNeg(a, b int64) (int64, bool) {
	if a != 0 && b > math.MaxInt64/a {
		return 0, false
	}
	return a * b, true
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
