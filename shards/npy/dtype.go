package npy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dtype is a numpy dtype as a .npy header describes it: what numpy.load
// would construct from the descr (see ParseDescr and the package
// documentation for the descrs accepted).
type Dtype struct {
	// ByteOrder is '<' (little-endian, also for native and unspecified
	// orders: gdsload runs on little-endian machines), '>' (big-endian) or
	// '|' (not applicable: bool, one-byte integers, bytes, raw and
	// structured records), as numpy's dtype.str gives it.
	ByteOrder byte
	// Kind is 'b' (bool), 'i', 'u', 'f', 'c' (complex), 'M' (datetime64),
	// 'm' (timedelta64), 'S' (bytes), 'U' (UCS-4 text), 'V' (raw bytes, or
	// a structured record when Fields is set) or 'O' (Python objects: only
	// inside errors, as such arrays are refused).
	Kind byte
	// ItemSize is the size of one element in bytes; it may be 0 ("S0").
	ItemSize int64
	// Unit is a datetime64/timedelta64 unit with its multiple, as numpy
	// writes it between brackets ("ns", "25s"); empty for the generic unit
	// and other kinds.
	Unit string
	// Fields are a structured record's named fields, in order (padding
	// left out; offsets tell where each field starts).
	Fields []Field
}

// Field is one named field of a structured dtype.
type Field struct {
	Name string
	// Title is the field's title, if the descr gives one as a string.
	Title  string
	Offset int64
	Dtype  Dtype
	// Shape is the field's subarray shape; empty for a scalar field.
	Shape []int64
}

// String returns the dtype as numpy's dtype.str writes it: "<f4", "|b1",
// "<U3", "<M8[ns]", and "|V12" for a structured record.
func (d Dtype) String() string {
	switch d.Kind {
	case 'O':
		return "|O"
	case 'M', 'm':
		if d.Unit == "" {
			return fmt.Sprintf("%c%c8", d.ByteOrder, d.Kind)
		}
		return fmt.Sprintf("%c%c8[%s]", d.ByteOrder, d.Kind, d.Unit)
	case 'U':
		return fmt.Sprintf("%cU%d", d.ByteOrder, d.ItemSize/4)
	}
	return fmt.Sprintf("%c%c%d", d.ByteOrder, d.Kind, d.ItemSize)
}

// hasObject reports whether d holds Python objects anywhere.
func (d Dtype) hasObject() bool {
	if d.Kind == 'O' {
		return true
	}
	for _, f := range d.Fields {
		if f.Dtype.hasObject() {
			return true
		}
	}
	return false
}

// maxItemSize is numpy's bound on an item size (a C int).
const maxItemSize = math.MaxInt32

// ParseDescr parses a dtype descr string as numpy.dtype does (numpy 1.24,
// on a little-endian 64-bit Linux machine): a byte order (<, >, =, |)
// before a kind and size ("<f4", "i8", "S5", "<U3", "V7", "b1"), a type
// code ("f", "d", "?", "e", "g", ...), a type name ("float32", "int",
// "complex128", "datetime64[ns]", ...), a datetime64 or timedelta64 with
// its unit ("<M8[ns]", "m8[25s]", "M8[s/1000]"), or a comma-separated list
// of those with repeat counts ("i4,(2,3)f8", a structured record; "2f4", a
// subarray). Object dtypes fail with ErrObjectDtype, anything numpy refuses
// with ErrUnsupportedDtype; the error is an *Error without offset.
//
// Subarray descrs ("2f4", "(2,3)<f8") are refused with ErrUnsupportedDtype:
// they describe arrays of arrays, which only a header's shape can size
// (ParseHeader reads them as numpy does).
func ParseDescr(descr string) (Dtype, error) {
	d, sub, err := parseDescrString(descr)
	if err != nil {
		return Dtype{}, err
	}
	if len(sub) > 0 {
		return Dtype{}, &Error{Offset: -1, Kind: ErrUnsupportedDtype, Detail: fmt.Sprintf("descr %q is a subarray dtype; ParseDescr takes element dtypes", descr)}
	}
	if d.hasObject() {
		return Dtype{}, &Error{Offset: -1, Kind: ErrObjectDtype, Detail: fmt.Sprintf("descr %q", descr)}
	}
	return d, nil
}

func unsupported(descr, why string) error {
	return &Error{Offset: -1, Kind: ErrUnsupportedDtype, Detail: fmt.Sprintf("descr %q: %s", descr, why)}
}

// parseDescrString is numpy's _convert_from_str: a dtype and, for a
// subarray descr, its shape.
func parseDescrString(descr string) (Dtype, []int64, error) {
	if isCommaString(descr) {
		return parseCommaString(descr)
	}
	s := descr
	endian := byte('=')
	if len(s) > 1 && strings.IndexByte("<>=|", s[0]) >= 0 {
		endian, s = s[0], s[1:]
		if endian == '|' {
			endian = '='
		}
	}
	if s == "" {
		return Dtype{}, nil, unsupported(descr, "no type after the byte order")
	}
	var d Dtype
	switch {
	case isDatetimeTypestr(s):
		var err error
		if d, err = parseDatetime(descr, s); err != nil {
			return Dtype{}, nil, err
		}
	case len(s) == 1:
		t, ok := typeCodes[s[0]]
		if !ok {
			return Dtype{}, nil, unsupported(descr, fmt.Sprintf("%q is not a numpy type code", s))
		}
		d = t
	default:
		var ok bool
		if d, ok = kindAndSize(s); !ok {
			// numpy looks the whole descr up, byte order included.
			if d, ok = typeNames[descr]; !ok {
				return Dtype{}, nil, unsupported(descr, "not a numpy type (a kind and size such as <f4, a type code or a type name such as float32)")
			}
		}
	}
	return withByteOrder(d, endian), nil, nil
}

// withByteOrder applies a byte order given in a descr to d ('=' keeps d's).
func withByteOrder(d Dtype, endian byte) Dtype {
	if endian == '=' || endian == '<' {
		return d // native: little-endian
	}
	if d.ByteOrder != '|' {
		d.ByteOrder = endian
	}
	return d
}

// kindAndSize parses a kind letter and a decimal size as numpy does with
// strtol (leading blanks and a sign allowed: "f 8", "V+3"). ok is false
// when s is not of that form or numpy has no such type (it then looks s
// up by name).
func kindAndSize(s string) (Dtype, bool) {
	n, ok := cStrtol(s[1:])
	if !ok || n < 0 || n > maxItemSize {
		return Dtype{}, false
	}
	switch kind := s[0]; kind {
	case 'S', 'a':
		return Dtype{ByteOrder: '|', Kind: 'S', ItemSize: n}, true
	case 'U':
		if 4*n > maxItemSize {
			return Dtype{}, false
		}
		return Dtype{ByteOrder: '<', Kind: 'U', ItemSize: 4 * n}, true
	case 'V':
		return Dtype{ByteOrder: '|', Kind: 'V', ItemSize: n}, true
	case 'b':
		if n == 1 {
			return Dtype{ByteOrder: '|', Kind: 'b', ItemSize: 1}, true
		}
	case 'i', 'u':
		switch n {
		case 1:
			return Dtype{ByteOrder: '|', Kind: kind, ItemSize: 1}, true
		case 2, 4, 8:
			return Dtype{ByteOrder: '<', Kind: kind, ItemSize: n}, true
		}
	case 'f':
		switch n {
		case 2, 4, 8, 16:
			return Dtype{ByteOrder: '<', Kind: 'f', ItemSize: n}, true
		}
	case 'c':
		switch n {
		case 8, 16, 32:
			return Dtype{ByteOrder: '<', Kind: 'c', ItemSize: n}, true
		}
	case 'O':
		if n == 4 || n == 8 {
			return Dtype{ByteOrder: '|', Kind: 'O', ItemSize: 8}, true
		}
	case 'M', 'm':
		if n == 8 {
			return Dtype{ByteOrder: '<', Kind: kind, ItemSize: 8}, true
		}
	}
	return Dtype{}, false
}

// cStrtol is C's strtol(s, &end, 10) with *end == '\0' required: leading
// white space, an optional sign, at least one digit, nothing after.
func cStrtol(s string) (int64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// typeCodes are numpy's one-character type codes.
var typeCodes = map[byte]Dtype{
	'?': {'|', 'b', 1, "", nil}, 'b': {'|', 'i', 1, "", nil}, 'B': {'|', 'u', 1, "", nil},
	'h': {'<', 'i', 2, "", nil}, 'H': {'<', 'u', 2, "", nil}, 'i': {'<', 'i', 4, "", nil}, 'I': {'<', 'u', 4, "", nil},
	'l': {'<', 'i', 8, "", nil}, 'L': {'<', 'u', 8, "", nil}, 'q': {'<', 'i', 8, "", nil}, 'Q': {'<', 'u', 8, "", nil},
	'p': {'<', 'i', 8, "", nil}, 'P': {'<', 'u', 8, "", nil},
	'e': {'<', 'f', 2, "", nil}, 'f': {'<', 'f', 4, "", nil}, 'd': {'<', 'f', 8, "", nil}, 'g': {'<', 'f', 16, "", nil},
	'F': {'<', 'c', 8, "", nil}, 'D': {'<', 'c', 16, "", nil}, 'G': {'<', 'c', 32, "", nil},
	'S': {'|', 'S', 0, "", nil}, 'a': {'|', 'S', 0, "", nil}, 'c': {'|', 'S', 1, "", nil},
	'U': {'<', 'U', 0, "", nil}, 'V': {'|', 'V', 0, "", nil}, 'O': {'|', 'O', 8, "", nil},
	'M': {'<', 'M', 8, "", nil}, 'm': {'<', 'm', 8, "", nil},
}

// typeNames are the names numpy.dtype knows (numpy 1.24's sctypeDict; the
// names numpy 2 kept are among them). Never modified.
var typeNames = func() map[string]Dtype {
	m := map[string]Dtype{}
	for _, group := range []struct {
		d     Dtype
		names string
	}{
		{Dtype{'|', 'b', 1, "", nil}, "bool bool8 bool_ b1"},
		{Dtype{'|', 'i', 1, "", nil}, "byte int8 i1"},
		{Dtype{'|', 'u', 1, "", nil}, "ubyte uint8 u1"},
		{Dtype{'<', 'i', 2, "", nil}, "short int16 i2"},
		{Dtype{'<', 'u', 2, "", nil}, "ushort uint16 u2"},
		{Dtype{'<', 'i', 4, "", nil}, "intc int32 i4"},
		{Dtype{'<', 'u', 4, "", nil}, "uintc uint32 u4"},
		{Dtype{'<', 'i', 8, "", nil}, "int int0 int64 int_ intp long longlong i8"},
		{Dtype{'<', 'u', 8, "", nil}, "uint uint0 uint64 uintp ulong ulonglong u8"},
		{Dtype{'<', 'f', 2, "", nil}, "half float16 f2"},
		{Dtype{'<', 'f', 4, "", nil}, "single float32 f4"},
		{Dtype{'<', 'f', 8, "", nil}, "double float float64 float_ f8"},
		{Dtype{'<', 'f', 16, "", nil}, "longdouble longfloat float128 f16"},
		{Dtype{'<', 'c', 8, "", nil}, "csingle singlecomplex complex64 c8"},
		{Dtype{'<', 'c', 16, "", nil}, "cdouble cfloat complex complex128 complex_ c16"},
		{Dtype{'<', 'c', 32, "", nil}, "clongdouble clongfloat longcomplex complex256 c32"},
		{Dtype{'|', 'S', 0, "", nil}, "bytes bytes0 bytes_ string_"},
		{Dtype{'<', 'U', 0, "", nil}, "str str0 str_ unicode unicode_"},
		{Dtype{'|', 'V', 0, "", nil}, "void void0"},
		{Dtype{'|', 'O', 8, "", nil}, "object object0 object_"},
		{Dtype{'<', 'M', 8, "", nil}, "M8 datetime64"},
		{Dtype{'<', 'm', 8, "", nil}, "m8 timedelta64"},
	} {
		for _, n := range strings.Fields(group.names) {
			m[n] = group.d
		}
	}
	return m
}()
