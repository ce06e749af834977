package npy

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors: every failure wraps exactly one of these inside an
// *Error, so callers can tell failures apart with errors.Is.
var (
	ErrNotNPY           = errors.New(`not a .npy file (no "\x93NUMPY" magic)`)
	ErrVersion          = errors.New("unsupported .npy format version")
	ErrHeaderTooLarge   = errors.New("header length exceeds the cap")
	ErrHeaderTruncated  = errors.New("file too short for its header")
	ErrHeaderEncoding   = errors.New("version 3.0 header is not valid UTF-8")
	ErrHeaderSyntax     = errors.New("header is not a Python dict literal")
	ErrMissingKey       = errors.New("header dict lacks a required key")
	ErrUnknownKey       = errors.New("header dict has an unknown key")
	ErrFieldType        = errors.New("header value has the wrong type")
	ErrInvalidShape     = errors.New("shape numpy cannot read")
	ErrShapeOverflow    = errors.New("array size overflows")
	ErrObjectDtype      = errors.New("object arrays (dtype 'O') are not supported: they hold pickled Python objects, not raw data")
	ErrUnsupportedDtype = errors.New("unsupported dtype descr")
	ErrDataLength       = errors.New("data length differs from dtype and shape")
	ErrRead             = errors.New("read failed")
)

// Error reports a failure to read, validate or write a .npy file. Kind is
// one of the Err* sentinels; errors.Is matches it and, when present, the
// underlying cause Err.
type Error struct {
	Path   string // file path; empty when parsing a bare io.ReaderAt
	Offset int64  // byte offset in the file where the problem was found; -1 if unknown
	Kind   error  // one of the Err* sentinels
	Detail string // the specifics: values found and expected
	Err    error  // underlying cause, may be nil
}

// Error says what failed, where (file, byte offset) and what to do.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("npy")
	if e.Path != "" {
		fmt.Fprintf(&b, ": %s", e.Path)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, ": at byte %d", e.Offset)
	}
	fmt.Fprintf(&b, ": %v", e.Kind)
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	fmt.Fprintf(&b, " (%s)", hint(e.Kind))
	return b.String()
}

// Unwrap returns the sentinel and, if any, the underlying cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// hint says what the user can do about a failure of the given kind.
func hint(kind error) string {
	switch kind {
	case ErrRead:
		return "check that the file is readable and was not changed or truncated meanwhile"
	case ErrHeaderTruncated, ErrDataLength:
		return "the file is truncated or has trailing bytes: copy or write it again"
	case ErrObjectDtype, ErrUnsupportedDtype:
		return "save a plain numeric array instead, e.g. np.save(path, np.ascontiguousarray(a, dtype=np.float32))"
	default:
		return "the file is corrupt or not written by numpy.save"
	}
}
