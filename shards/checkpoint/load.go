package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gdsload/gdsload/loader"
)

// Allocator returns a destination of at least size bytes for one file's
// data region, and a function that frees it (nil when there is nothing to
// free). Load calls it once per file, from one goroutine, after every
// header was validated, and frees what it got if the load fails. Host
// memory: HostAllocator. GPU memory: a loader GPU destination
// (loader.NewGPUBounceDestination, loader.NewGPUDirectDestination) whose
// Close is the free function; a loader.GPUDirect keeps cuFile handles of
// the checkpoint's files, so free it (Loaded.Close) before closing the
// Checkpoint.
type Allocator func(size int64) (dst loader.Destination, free func() error, err error)

// HostAllocator is an Allocator of page-aligned, pre-touched host memory
// (loader.AllocHost) wrapped in a loader.HostBuffer, so O_DIRECT reads land
// in it without a bounce copy and Loaded.Bytes can return tensor bytes.
func HostAllocator(size int64) (loader.Destination, func() error, error) {
	if size < 0 || size > math.MaxInt {
		return nil, nil, fmt.Errorf("host allocation of %d bytes: size out of range", size)
	}
	b, err := loader.AllocHost(int(size))
	if err != nil {
		return nil, nil, err
	}
	return loader.NewHostBuffer(b), func() error { return loader.FreeHost(b) }, nil
}

// ioAlignment is the alignment a file's read starts at: its direct-I/O
// alignment, and at least 4 KiB so that a GPU destination's device offsets
// also match file offsets modulo the 4 KiB cuFile's fast path wants.
func ioAlignment(f loader.Source) int64 {
	if a, ok := f.(interface{ Alignment() int64 }); ok {
		return max(a.Alignment(), loader.DefaultAlignment)
	}
	return loader.DefaultAlignment
}

// Load reads every file's data region into its own allocation from alloc,
// all files in one loader.Load with lopts (workers, chunk size, checksum,
// path and reason, progress). Each file is one job starting at its data
// offset rounded down to the file's I/O alignment (the head slack), so an
// allocation holds the file's bytes from that offset to its end and
// Tensor.Offset is congruent to the tensor's file offset modulo
// Allocation.Alignment. The head slack is the job's lead (loader.Job), so
// gds reads start at the aligned offset, where cuFile reads fastest. It returns once every byte landed; on error or
// cancellation it frees whatever it allocated and returns an error naming
// the checkpoint and, from the loader, the file and offset. The caller
// must Close the Loaded to free its allocations.
func (c *Checkpoint) Load(ctx context.Context, alloc Allocator, lopts loader.Options) (_ *Loaded, err error) {
	all := make([]int, len(c.files))
	for i := range all {
		all[i] = i
	}
	return c.loadFiles(ctx, all, alloc, lopts)
}

// loadFiles is Load of the files indexed by which; Allocations follow
// which's order and BytesRead counts those files' headers.
func (c *Checkpoint) loadFiles(ctx context.Context, which []int, alloc Allocator, lopts loader.Options) (_ *Loaded, err error) {
	if alloc == nil {
		return nil, fmt.Errorf("checkpoint %s: load: no allocator", c.path)
	}
	if len(c.files) == 0 {
		return nil, fmt.Errorf("checkpoint %s: load: the checkpoint is closed", c.path)
	}
	l := &Loaded{index: make(map[string]int), Metadata: c.metadata}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close())
		}
	}()
	jobs := make([]loader.Job, len(which))
	var headers int64
	for i, fi := range which {
		s := c.files[fi]
		headers += s.header.DataOffset
		align := ioAlignment(s.src)
		p, err := s.header.Plan(align)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %s: %w", c.path, s.src.Name(), err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dst, free, err := alloc(p.AllocLength)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: allocating %d bytes for %s: %w", c.path, p.AllocLength, s.src.Name(), err)
		}
		l.frees = append(l.frees, free)
		if dst == nil {
			return nil, fmt.Errorf("checkpoint %s: allocating %d bytes for %s: the allocator returned no destination", c.path, p.AllocLength, s.src.Name())
		}
		l.Allocations = append(l.Allocations, Allocation{
			File: s.src.Name(), Dest: dst, Size: p.AllocLength, FileOffset: p.FileOffset, Alignment: align,
		})
		// Read the data region only, at the head slack, so the checksum of
		// the job is that of the tensor data and device offsets still
		// match file offsets modulo the alignment. The head slack is the
		// job's lead: a gds read starts at the aligned FileOffset, on
		// cuFile's fast path.
		jobs[i] = loader.Job{Source: s.src, Offset: p.FileOffset + p.HeadSlack, Length: p.Length - p.HeadSlack,
			Dest: dst, DestOffset: p.HeadSlack, Lead: p.HeadSlack}
		for _, v := range p.Views {
			l.index[v.Name] = len(l.Tensors)
			l.Tensors = append(l.Tensors, Tensor{Name: v.Name, Dtype: v.Dtype, Shape: v.Shape, File: i, Offset: v.Offset, Bytes: v.Bytes})
		}
	}
	res, err := loader.Load(ctx, jobs, lopts)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.path, err)
	}
	l.Result = res
	l.BytesRead = headers + res.Bytes
	return l, nil
}
