package webdataset

import (
	"errors"
	"fmt"
)

var (
	// ErrMemberTooLarge reports a tar member larger than the reader's
	// member cap (WithMaxMemberBytes).
	ErrMemberTooLarge = errors.New("tar member exceeds the member size cap")
	// ErrSampleTooLarge reports a sample whose members together exceed the
	// reader's sample cap (WithMaxSampleBytes).
	ErrSampleTooLarge = errors.New("sample exceeds the sample size cap")
	// ErrDuplicateField reports two members of one sample with the same
	// (lowercased) extension, which WebDataset also refuses.
	ErrDuplicateField = errors.New("duplicate extension within a sample")
)

// Error is what a Reader returns when a shard cannot be read: which shard,
// which member and where in the uncompressed tar stream.
type Error struct {
	Shard  string // shard name given with WithName; may be empty
	Member string // tar member name; empty when the failure precedes it
	Offset int64  // offset in the uncompressed tar stream
	Err    error  // the underlying cause
}

// Error describes the failure with its location.
func (e *Error) Error() string {
	shard := e.Shard
	if shard == "" {
		shard = "<stream>"
	}
	if e.Member != "" {
		return fmt.Sprintf("webdataset: shard %s: member %q at tar offset %d: %v", shard, e.Member, e.Offset, e.Err)
	}
	return fmt.Sprintf("webdataset: shard %s at tar offset %d: %v", shard, e.Offset, e.Err)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }
