package npy

import (
	"fmt"
	"strconv"
)

// Dtype is a parsed plain numeric dtype descr such as "<f4".
type Dtype struct {
	// ByteOrder is '<' (little-endian), '>' (big-endian), '=' (native,
	// also when the descr has none) or '|' (not applicable).
	ByteOrder byte
	// Kind is 'b' (bool), 'i', 'u', 'f' or 'c' (complex). A "?" descr is
	// reported as 'b'.
	Kind byte
	// ItemSize is the size of one element in bytes.
	ItemSize int64
}

// ParseDescr parses a dtype descr string as numpy writes it: an optional
// byte order (<, >, |, =), a kind (b, i, u, f, c, or ? for bool) and the item
// size in bytes (required except for ?). Sizes are those numpy has: b1;
// i/u 1, 2, 4, 8; f 2, 4, 8, 16; c 8, 16, 32. Object dtypes fail with
// ErrObjectDtype, anything else unsupported with ErrUnsupportedDtype; the
// returned error is an *Error without offset.
func ParseDescr(descr string) (Dtype, error) {
	fail := func(kind error, why string) (Dtype, error) {
		return Dtype{}, &Error{Offset: -1, Kind: kind, Detail: fmt.Sprintf("descr %q: %s", descr, why)}
	}
	s := descr
	d := Dtype{ByteOrder: '='}
	if s != "" && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=') {
		d.ByteOrder, s = s[0], s[1:]
	}
	if s == "" {
		return fail(ErrUnsupportedDtype, "no kind")
	}
	kind, size := s[0], s[1:]
	if kind == 'O' {
		return fail(ErrObjectDtype, "object dtype")
	}
	if kind == '?' {
		if size != "" {
			return fail(ErrUnsupportedDtype, "'?' takes no size")
		}
		d.Kind, d.ItemSize = 'b', 1
		return d, nil
	}
	var allowed []int64
	switch kind {
	case 'b':
		allowed = []int64{1}
	case 'i', 'u':
		allowed = []int64{1, 2, 4, 8}
	case 'f':
		allowed = []int64{2, 4, 8, 16}
	case 'c':
		allowed = []int64{8, 16, 32}
	default:
		return fail(ErrUnsupportedDtype, fmt.Sprintf("kind %q is not one of b, i, u, f, c, ?", kind))
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || size[0] == '+' || size[0] == '-' {
		return fail(ErrUnsupportedDtype, fmt.Sprintf("item size %q is not a number", size))
	}
	for _, a := range allowed {
		if n == a {
			d.Kind, d.ItemSize = kind, n
			return d, nil
		}
	}
	return fail(ErrUnsupportedDtype, fmt.Sprintf("kind %q has no %d-byte size", kind, n))
}
