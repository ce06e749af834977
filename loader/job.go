package loader

import "fmt"

// Job asks for Length bytes of Source at Offset to land in Dest at
// DestOffset. A Length of -1 means up to the end of the source.
type Job struct {
	Source     Source
	Offset     int64
	Length     int64
	Dest       Destination
	DestOffset int64
	// Lead is how many bytes just before Offset may land just before
	// DestOffset too (at most both offsets; 0 for none). A destination
	// that reads files itself (the gds path) then starts an unaligned
	// job at the 4 KiB-aligned file offset below Offset, into the
	// matching destination offset, so cuFile takes its fast path instead
	// of bouncing that read internally. The lead bytes are not counted,
	// checksummed or compared. A checkpoint's head slack (the end of its
	// header) is such room.
	Lead int64
}

// WholeFile is a job for all of src into dst at offset 0.
func WholeFile(src Source, dst Destination) Job {
	return Job{Source: src, Length: -1, Dest: dst}
}

// Error is a failed load: what failed, on which source and at which offset.
type Error struct {
	Op     string // "read", "land", "verify", ...
	Name   string // the source's name
	Offset int64  // source offset of the failing chunk, -1 if none
	Err    error
}

func (e *Error) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%s %s: %v", e.Op, e.Name, e.Err)
	}
	return fmt.Sprintf("%s %s at offset %d: %v", e.Op, e.Name, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// plan is a job cut into chunks. When the job starts at an unaligned
// offset (a safetensors data region, say), the first chunk only reaches the
// next alignment boundary; every later chunk starts aligned for direct I/O
// and is chunk bytes long, the last one excepted.
type plan struct {
	Job
	route   route
	index   int
	end     int64 // source offset one past the last byte
	first   int64 // first chunk boundary after Offset
	chunk   int64
	nChunks int
}

func newPlan(index int, j Job, chunk, align int64) (plan, error) {
	if j.Source == nil || j.Dest == nil {
		return plan{}, fmt.Errorf("job %d: source and destination are required", index)
	}
	size := j.Source.Size()
	length := j.Length
	if length < 0 {
		length = size - j.Offset
	}
	if j.Offset < 0 || length < 0 || j.Offset+length > size {
		return plan{}, &Error{Op: "plan", Name: j.Source.Name(), Offset: j.Offset,
			Err: fmt.Errorf("range of %d bytes outside the source's %d bytes", length, size)}
	}
	if j.Lead < 0 || j.Lead > j.Offset || j.Lead > j.DestOffset {
		return plan{}, &Error{Op: "plan", Name: j.Source.Name(), Offset: j.Offset,
			Err: fmt.Errorf("lead of %d bytes: want 0 to the job's offsets (%d in the source, %d in the destination)", j.Lead, j.Offset, j.DestOffset)}
	}
	if s, ok := j.Dest.(Sized); ok && (j.DestOffset < 0 || j.DestOffset+length > s.Len()) {
		return plan{}, &Error{Op: "plan", Name: j.Source.Name(), Offset: -1,
			Err: fmt.Errorf("%d bytes at destination offset %d do not fit its %d bytes", length, j.DestOffset, s.Len())}
	}
	p := plan{Job: j, index: index, end: j.Offset + length, chunk: chunk}
	p.route = routeOf(j)
	p.Length = length
	p.first = alignUp(j.Offset, align)
	if p.first == j.Offset {
		p.first += chunk
	}
	if length > 0 {
		p.nChunks = 1
		if p.end > p.first {
			p.nChunks += int((p.end - p.first + chunk - 1) / chunk)
		}
	}
	return p, nil
}

// route is how a job's chunks travel.
type route int

const (
	// routeSpan: the source reads into memory the destination lends.
	routeSpan route = iota
	// routeFile: the destination reads the file itself (gds).
	routeFile
	// routeDevice: the source writes into device memory itself (rdma).
	routeDevice
)

func routeOf(j Job) route {
	// cuFile reads only O_DIRECT descriptors: a buffered file takes the
	// span route, through the destination's pinned buffers.
	_, fileDst := j.Dest.(FileReaderDestination)
	if fd, ok := j.Source.(FileDescriptorSource); ok && fileDst && fd.Direct() {
		return routeFile
	}
	_, devDst := j.Dest.(DeviceDestination)
	_, devSrc := j.Source.(DeviceReaderSource)
	if routeOfDest(j.Dest) == RouteRDMA && devDst && devSrc {
		return routeDevice
	}
	return routeSpan
}

// chunkAt returns the source range of chunk i.
func (p *plan) chunkAt(i int) (off, n int64) {
	if i == 0 {
		return p.Offset, min(p.end, p.first) - p.Offset
	}
	off = p.first + int64(i-1)*p.chunk
	return off, min(p.end, off+p.chunk) - off
}

// ChunkSizer is an optional capability of a Source: the chunk size its
// reads are best made in when the caller asks for none (Options.ChunkSize
// and WithChunkSize 0). An object store's ranged GETs each cost the server
// a request, so they want larger chunks than a file's reads do.
type ChunkSizer interface {
	PreferredChunkSize() int64
}

// EffectiveChunkSize is the chunk size a load of srcs uses when asked for
// chunk (0: preferredChunkSize), rounded up to the sources' alignment.
// Buffers sized with it fit every chunk.
func EffectiveChunkSize(chunk int64, srcs []Source) int64 {
	if chunk <= 0 {
		chunk = preferredChunkSize(srcs)
	}
	return alignUp(chunk, alignmentOf(srcs))
}

// preferredChunkSize is DefaultChunkSize, or the largest chunk size that a
// source of srcs prefers (ChunkSizer), up to MaxChunkSize.
func preferredChunkSize(srcs []Source) int64 {
	chunk := int64(DefaultChunkSize)
	for _, s := range srcs {
		if cs, ok := s.(ChunkSizer); ok {
			chunk = max(chunk, min(cs.PreferredChunkSize(), MaxChunkSize))
		}
	}
	return chunk
}

// autoChunkSize is the chunk size of a load of jobs that asks for none:
// preferredChunkSize, but no more than the buffers of a destination that
// has fixed ones (a Ring, a GPU destination's pinned buffers), made for
// the chunk size of its caller's choosing.
func autoChunkSize(jobs []Job, srcs []Source) int64 {
	chunk := preferredChunkSize(srcs)
	for _, j := range jobs {
		if b, ok := j.Dest.(interface{ BufferSize() int64 }); ok && b.BufferSize() > 0 {
			chunk = min(chunk, b.BufferSize())
		}
	}
	return chunk
}

// alignmentOf is the largest direct-I/O alignment among srcs, at least
// DefaultAlignment (cuFile's fast path wants 4 KiB whatever the file
// system says).
func alignmentOf(srcs []Source) int64 {
	align := int64(DefaultAlignment)
	for _, s := range srcs {
		if a, ok := s.(interface{ Alignment() int64 }); ok && a.Alignment() > align {
			align = a.Alignment()
		}
	}
	return align
}
