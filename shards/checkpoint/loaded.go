package checkpoint

import (
	"errors"

	"github.com/gdsload/gdsload/loader"
)

// Loaded is a checkpoint in memory: one allocation per file and the tensors
// as views into them. It is independent of the Checkpoint it came from.
type Loaded struct {
	// Tensors are in file order, then in data-region order within a file.
	Tensors []Tensor
	// Allocations are one per file, in Checkpoint.Files order.
	Allocations []Allocation
	// Result is the loader's report: bytes, time, route and reason, and
	// per file whether O_DIRECT was used and any checksum. A file's
	// checksum covers its data region (the tensors' bytes, in file
	// order), not its header: two files holding the same tensors under
	// different metadata have the same digest. It is not the digest of
	// the whole file that sha256sum computes.
	Result *loader.Result
	// BytesRead is the bytes read from storage for the checkpoint: its
	// files' headers (Checkpoint.HeaderBytes) and data regions.
	BytesRead int64
	// Metadata is the checkpoint's (Checkpoint.Metadata), for saving it
	// back.
	Metadata map[string]string

	index  map[string]int
	frees  []func() error
	closed bool
}

// Tensor is a view of one tensor's bytes in an allocation.
type Tensor struct {
	Name  string
	Dtype string  // a safetensors dtype name, e.g. "F32", "BF16"
	Shape []int64 // empty for a scalar; shared with the Checkpoint, do not modify
	// File indexes Loaded.Allocations: the allocation holding the bytes.
	File int
	// Offset is the byte offset of the tensor's first byte in its
	// allocation; Bytes its length.
	Offset int64
	Bytes  int64
}

// Allocation is the destination one file's data region landed in.
type Allocation struct {
	// File is the path of the file.
	File string
	// Dest is what the Allocator returned; for HostAllocator a
	// *loader.HostBuffer, for a GPU a loader GPU destination whose
	// DevicePtr is the address of offset 0.
	Dest loader.Destination
	// Size is the number of bytes asked of the Allocator.
	Size int64
	// FileOffset is the file offset whose byte sits at offset 0: the data
	// region's offset rounded down to Alignment. The bytes before the data
	// region (the head slack) are the end of the file's header.
	FileOffset int64
	// Alignment is the I/O alignment the read started at; offsets in the
	// allocation equal file offsets modulo Alignment.
	Alignment int64
}

// Tensor returns the view called name, and false if there is none.
func (l *Loaded) Tensor(name string) (Tensor, bool) {
	i, ok := l.index[name]
	if !ok {
		return Tensor{}, false
	}
	return l.Tensors[i], true
}

// Bytes returns the bytes of the tensor called name when its allocation is
// host memory (a destination with a Bytes() []byte method, such as
// loader.HostBuffer): a slice of the allocation, not a copy, valid until
// Close. It returns nil for an unknown name, for device memory, and after
// Close.
func (l *Loaded) Bytes(name string) []byte {
	t, ok := l.Tensor(name)
	if !ok || l.closed {
		return nil
	}
	h, ok := l.Allocations[t.File].Dest.(interface{ Bytes() []byte })
	if !ok {
		return nil
	}
	b := h.Bytes()
	return b[t.Offset : t.Offset+t.Bytes : t.Offset+t.Bytes]
}

// Close frees every allocation. Views and slices from Bytes must not be
// used afterwards. Calling it again does nothing.
func (l *Loaded) Close() error {
	var errs []error
	for _, free := range l.frees {
		if free != nil {
			errs = append(errs, free())
		}
	}
	l.frees, l.closed = nil, true
	return errors.Join(errs...)
}
