package loader

import (
	"context"
	"io"
)

// Source is something a load can read byte ranges from.
//
// ReadAt follows io.ReaderAt: clients may call it from many goroutines at
// once, and it returns a non-nil error whenever it reads fewer than len(p)
// bytes. Size is the size the source had when it was opened; the loader
// never reads past it. A source value must be comparable (a pointer, or a
// struct of comparable fields): the loader verifies each distinct source
// of a load once.
type Source interface {
	io.ReaderAt
	// Name identifies the source in errors and results (a path or URL).
	Name() string
	// Size is the number of bytes the source holds.
	Size() int64
}

// FileDescriptorSource is an optional capability of a Source backed by a
// local file: GPUDirect Storage (cuFile) reads from its descriptor.
type FileDescriptorSource interface {
	Source
	// Fd returns the descriptor. It stays valid until the source is closed.
	Fd() uintptr
	// Direct reports whether the descriptor was opened with O_DIRECT.
	Direct() bool
	// Alignment is the file offset and length alignment direct I/O needs.
	Alignment() int64
}

// DirectInfo is an optional capability that reports how a source reads:
// whether it uses direct I/O and, if it wanted to and could not, why.
type DirectInfo interface {
	// Direct reports whether reads bypass the page cache.
	Direct() bool
	// DirectReason says why direct I/O is not used ("" when it is, or
	// when it was not asked for).
	DirectReason() string
}

// Verifier is an optional capability: Verify reports an error when the
// source changed since it was opened (size, modification or change time,
// identity), so a load never returns silently mixed bytes.
type Verifier interface {
	Verify() error
}

// DeviceReaderSource is an optional capability of a remote Source that
// lands bytes in device memory itself (rdmafs over verbs: the server
// RDMA-writes into the registered GPU range). ReadAtDevice reads n bytes at
// off into the device address ptr, like ReadAt.
type DeviceReaderSource interface {
	Source
	ReadAtDevice(ctx context.Context, ptr uintptr, n, off int64) (int, error)
}

// ContextReaderAt is an optional capability of a Source whose reads can
// be cancelled (a remote file): the loader calls ReadAtContext with the
// load's context instead of ReadAt, so cancelling a load stops reads in
// flight. It follows ReadAt's contract otherwise.
type ContextReaderAt interface {
	ReadAtContext(ctx context.Context, p []byte, off int64) (int, error)
}

// DeviceMemory is what a source that lands bytes in GPU memory by RDMA
// needs from the GPU stack (cufile.RDMAMemory implements it for one GPU;
// its method set is rdmafs.DeviceMemory's).
type DeviceMemory interface {
	DmaBufFd(ptr uintptr, n int64) (fd int, offset uint64, err error)
	SyncMemops(ptr uintptr) error
	FlushRDMAWrites() error
}

// DeviceBinder is an optional capability of a DeviceReaderSource whose
// device reads need the GPU stack's help (rdmafs over verbs registers GPU
// memory through it). BindDevice returns the source that reads into the
// GPU mem belongs to, and false when this source cannot land bytes in
// device memory at all (rdmafs over tcp): a GPU destination then reads it
// into pinned host memory. Landing.Jobs binds the sources it lays out.
type DeviceBinder interface {
	BindDevice(mem DeviceMemory) (DeviceReaderSource, bool)
}
