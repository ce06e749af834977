package loader

import (
	"context"
	"fmt"
)

// HostBuffer is a Destination backed by caller-supplied host memory: the
// library API for loading files into buffers the caller owns. Chunks land in
// place without copies (for O_DIRECT, when the memory and the destination
// offsets are aligned like the file offsets; AllocHost gives such memory).
type HostBuffer struct {
	buf []byte
}

// NewHostBuffer wraps buf as a destination. The loader writes into it; the
// caller must not touch it until the load returns.
func NewHostBuffer(buf []byte) *HostBuffer { return &HostBuffer{buf: buf} }

// Bytes returns the memory behind the destination.
func (h *HostBuffer) Bytes() []byte { return h.buf }

// Len is the destination's capacity.
func (h *HostBuffer) Len() int64 { return int64(len(h.buf)) }

// Kind returns "host".
func (h *HostBuffer) Kind() string { return "host" }

// Span returns the destination memory itself.
func (h *HostBuffer) Span(ctx context.Context, off, n int64) (Span, error) {
	if off < 0 || n < 0 || off+n > int64(len(h.buf)) {
		return Span{}, fmt.Errorf("host destination: bytes [%d, %d) outside its %d bytes", off, off+n, len(h.buf))
	}
	return Span{Buf: h.buf[off : off+n : off+n], Commit: noCommit, Abort: noAbort}, nil
}

// Flush does nothing: host memory is written in place.
func (h *HostBuffer) Flush(context.Context) error { return nil }

func noCommit(context.Context) error { return nil }
func noAbort()                       {}
