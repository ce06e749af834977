package safetensors

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors: every validation failure wraps exactly one of these inside
// an *Error, so callers can tell failures apart with errors.Is.
var (
	ErrHeaderTruncated  = errors.New("file too short for its header")
	ErrHeaderTooLarge   = errors.New("header length exceeds 100,000,000 bytes")
	ErrInvalidUTF8      = errors.New("header is not valid UTF-8")
	ErrInvalidJSON      = errors.New("header is not valid JSON")
	ErrHeaderNotObject  = errors.New("header is not a JSON object")
	ErrMetadata         = errors.New(`"__metadata__" is not an object of string values`)
	ErrDuplicateTensor  = errors.New("duplicate tensor name")
	ErrInvalidTensor    = errors.New("tensor entry is malformed")
	ErrMissingField     = errors.New("tensor entry lacks a required field")
	ErrUnknownField     = errors.New("tensor entry has an unknown field")
	ErrDuplicateField   = errors.New("tensor entry repeats a field")
	ErrUnknownDtype     = errors.New("unknown dtype")
	ErrInvalidShape     = errors.New("shape is not an array of non-negative integers")
	ErrShapeOverflow    = errors.New("tensor size overflows")
	ErrInvalidOffsets   = errors.New("data_offsets is not a [begin, end] pair with begin <= end")
	ErrSubByte          = errors.New("sub-byte tensor does not fill whole bytes")
	ErrSizeMismatch     = errors.New("data_offsets span differs from dtype and shape")
	ErrOffsetsGap       = errors.New("gap between tensors in the data region")
	ErrOffsetsOverlap   = errors.New("tensors overlap in the data region")
	ErrDataRegionLength = errors.New("data region length differs from the end of the last tensor")
	ErrRead             = errors.New("read failed")
	ErrIndex            = errors.New("invalid safetensors index")
	ErrIndexFileName    = errors.New("index names a file outside its directory")
)

// Error reports a failure to read, validate or write a safetensors file. Kind
// is one of the Err* sentinels; errors.Is matches it and, when present, the
// underlying cause Err.
type Error struct {
	Path   string // file path; empty when parsing a bare io.ReaderAt
	Tensor string // tensor name; empty when the failure is not about one tensor
	Offset int64  // byte offset in the file where the problem was found; -1 if unknown
	Kind   error  // one of the Err* sentinels
	Detail string // the specifics: values found and expected
	Err    error  // underlying cause, may be nil
}

// Error says what failed, where (file, tensor, byte offset) and what to do.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("safetensors")
	if e.Path != "" {
		fmt.Fprintf(&b, ": %s", e.Path)
	}
	if e.Tensor != "" {
		fmt.Fprintf(&b, ": tensor %q", e.Tensor)
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
	b.WriteString(" (")
	b.WriteString(hint(e.Kind))
	b.WriteString(")")
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
	case ErrHeaderTruncated, ErrDataRegionLength:
		return "the file is truncated or has trailing bytes: copy or download it again"
	case ErrIndex, ErrIndexFileName:
		return "fix or regenerate the index file; shard names must be plain names relative to it"
	default:
		return "the file is corrupt or not a valid safetensors file: re-export it with the safetensors library"
	}
}

// withPath sets the file path on err if err is an *Error without one.
func withPath(err error, path string) error {
	var e *Error
	if errors.As(err, &e) && e.Path == "" {
		e.Path = path
	}
	return err
}
