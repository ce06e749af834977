package loader

import "context"

// Destination receives the bytes of a load.
//
// Span hands out the host-visible memory that will receive the destination
// bytes [off, off+n). It may block until memory is free (a ring), and it must
// return an error rather than block once ctx is done. The caller fills
// Span.Buf completely, then calls Commit exactly once, or Abort if the read
// failed. Implementations must allow concurrent calls from many workers.
//
// For host memory supplied by the caller, Span returns a slice of that
// memory and Commit does nothing. For a ring it returns a reused buffer and
// Commit recycles it. For a GPU through the bounce path it returns a pinned
// buffer and Commit starts an asynchronous copy to the device.
//
// A destination value must be comparable (a pointer, as every destination
// here is): the loader flushes each distinct destination of a load once.
type Destination interface {
	// Span returns memory for destination bytes [off, off+n).
	Span(ctx context.Context, off, n int64) (Span, error)
	// Flush waits until every committed span has landed (copies done).
	Flush(ctx context.Context) error
	// Kind names the destination memory: "host", "ring" or "gpu:N".
	Kind() string
}

// Span is memory lent by a Destination for one chunk.
type Span struct {
	// Buf receives the chunk; len(Buf) is the chunk length.
	Buf []byte
	// Commit makes Buf's bytes land at their destination offset. Buf must
	// not be touched after Commit.
	Commit func(ctx context.Context) error
	// Abort returns the memory without landing anything.
	Abort func()
}

// Sized is an optional capability of a destination with a fixed capacity;
// the loader refuses jobs that would write past it before reading anything.
type Sized interface {
	Len() int64
}

// FileReaderDestination is an optional capability of a destination that can
// read from a file descriptor itself, without host memory in between (the
// gds path: cuFileRead straight into GPU memory). ReadFromFile reads n bytes
// at file offset fileOff into destination offset dstOff and returns the
// number of bytes read; short counts are only legal at end of file.
type FileReaderDestination interface {
	Destination
	ReadFromFile(ctx context.Context, src FileDescriptorSource, fileOff, dstOff, n int64) (int64, error)
}

// DeviceDestination is an optional capability of a destination in device
// memory: DeviceAddress is the address of destination offset off, where a
// DeviceReaderSource may write directly (the rdma path).
type DeviceDestination interface {
	Destination
	DeviceAddress(off int64) uintptr
}

// ReadBacker is an optional capability of a destination whose memory the
// host cannot read directly (GPU memory): ReadBack copies destination bytes
// [off, off+len(p)) into p, so checksums cover the bytes as they landed.
type ReadBacker interface {
	ReadBack(ctx context.Context, off int64, p []byte) error
}
