package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// ErrNoTensor reports a tensor name the checkpoint does not hold.
var ErrNoTensor = errors.New("no such tensor")

// Request names one tensor to Fetch, whole or a selection of it.
type Request struct {
	Name string
	// Slice selects per dimension (safetensors.PlanSlice); nil takes the
	// whole tensor.
	Slice []safetensors.DimSlice
}

// FetchOptions tune Fetch. The zero value is usable.
type FetchOptions struct {
	// MaxGap bounds the unselected bytes a slice's read goes through in
	// a row (safetensors.PlanSlice); 0 is safetensors.DefaultMaxGap.
	MaxGap int64
}

// Piece is one fetched request: its staging allocation and where the
// selected elements sit in it.
type Piece struct {
	Name  string
	Dtype string
	// Plan says which bytes were read and the selection's layout in
	// Dest: element i is at Plan.Base + sum(i_d*Plan.Strides[d]). When
	// Plan.Compact is set Dest holds exactly the selection, row-major.
	Plan safetensors.SlicePlan
	// Dest is the allocation of Plan.Size bytes the Allocator returned.
	Dest loader.Destination
}

// Fetched is what Fetch read: one allocation per request.
type Fetched struct {
	Pieces []Piece
	// Result is the loader's report (one job per read range).
	Result *loader.Result
	// BytesRead is the bytes read from storage: the sum of the ranges.
	BytesRead int64

	frees []func() error
}

// Close frees every piece's allocation. Calling it again does nothing.
func (f *Fetched) Close() error {
	var errs []error
	for _, free := range f.frees {
		if free != nil {
			errs = append(errs, free())
		}
	}
	f.frees = nil
	return errors.Join(errs...)
}

// HeaderBytes returns the bytes Open read to describe the checkpoint's
// files: each file's header (8 bytes of length and the JSON, or a .npy
// header), which is everything before its data region.
func (c *Checkpoint) HeaderBytes() int64 {
	var n int64
	for _, s := range c.files {
		n += s.header.DataOffset
	}
	return n
}

// Fetch reads only what reqs ask for: each request's bytes (a whole
// tensor, or the ranges safetensors.PlanSlice plans for its selection)
// into its own allocation from alloc, every range of every request one
// job of a single loader.Load with lopts, so the reads are pipelined
// across the loader's workers. Nothing else of the checkpoint is read, and
// each allocation holds Plan.Size bytes: the selection, plus for a slice
// that is not contiguous in the file at most opts.MaxGap unselected bytes
// per gap. A name the checkpoint lacks, a selection outside the tensor or
// a slice of a packed sub-byte dtype is refused before anything is
// allocated. On error everything allocated is freed. The caller must
// Close the Fetched to free its allocations.
func (c *Checkpoint) Fetch(ctx context.Context, reqs []Request, alloc Allocator, lopts loader.Options, opts FetchOptions) (_ *Fetched, err error) {
	if alloc == nil {
		return nil, fmt.Errorf("checkpoint %s: fetch: no allocator", c.path)
	}
	if len(c.files) == 0 {
		return nil, fmt.Errorf("checkpoint %s: fetch: the checkpoint is closed", c.path)
	}
	type where struct {
		file int
		info safetensors.TensorInfo
	}
	byName := make(map[string]where)
	for i, s := range c.files {
		for _, t := range s.header.Tensors {
			byName[t.Name] = where{i, t}
		}
	}
	f := &Fetched{Pieces: make([]Piece, len(reqs))}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Close())
		}
	}()
	places := make([]where, len(reqs))
	for i, r := range reqs {
		w, ok := byName[r.Name]
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: fetch: %w: no tensor %q", c.path, ErrNoTensor, r.Name)
		}
		bits, _ := safetensors.DtypeBits(w.info.Dtype)
		elem := bits / 8
		if bits%8 != 0 {
			if r.Slice != nil {
				return nil, fmt.Errorf("checkpoint %s: tensor %q is %s, packed %d-bit elements: fetch it whole, not a slice", c.path, r.Name, w.info.Dtype, bits)
			}
			// A whole packed tensor is its bytes.
			elem, w.info.Shape = 1, []int64{w.info.Bytes()}
		}
		p, err := safetensors.PlanSlice(w.info.Shape, elem, r.Slice, opts.MaxGap)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: tensor %q: %w", c.path, r.Name, err)
		}
		f.Pieces[i] = Piece{Name: r.Name, Dtype: w.info.Dtype, Plan: p}
		places[i] = w
	}
	var jobs []loader.Job
	for i := range f.Pieces {
		pc := &f.Pieces[i]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dst, free, err := alloc(pc.Plan.Size)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: allocating %d bytes for tensor %q: %w", c.path, pc.Plan.Size, pc.Name, err)
		}
		f.frees = append(f.frees, free)
		if dst == nil {
			return nil, fmt.Errorf("checkpoint %s: allocating %d bytes for tensor %q: the allocator returned no destination", c.path, pc.Plan.Size, pc.Name)
		}
		pc.Dest = dst
		s := c.files[places[i].file]
		begin := s.header.DataOffset + places[i].info.Begin
		for _, r := range pc.Plan.Ranges {
			jobs = append(jobs, loader.Job{Source: s.src, Offset: begin + r.Offset, Length: r.Length, Dest: dst, DestOffset: r.Dest})
			f.BytesRead += r.Length
		}
	}
	if len(jobs) == 0 {
		f.Result = &loader.Result{Route: loader.RouteHost, Reason: lopts.Reason}
		return f, nil
	}
	res, err := loader.Load(ctx, jobs, lopts)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.path, err)
	}
	f.Result = res
	return f, nil
}
