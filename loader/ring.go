package loader

import (
	"context"
	"fmt"
	"sync"
)

// Ring is a Destination for streaming loads: a bounded set of reused host
// buffers that chunks land in and are released from once committed (and,
// when a checksum is asked for, hashed). It is what `gdsload load --to
// host` uses, like gdsio's CPUONLY mode: memory stays bounded by count ×
// size whatever the file sizes, and nothing is allocated per load. A Ring
// is reused across loads; Close frees its memory.
//
// A buffer is touched (its first-touch page faults taken) only when a load
// first needs it: a load that never holds more than k buffers at once
// touches k of them. Fresh memory is dear on a VM: touching all 64 MiB of
// the default ring in the background took a large share of the CPU of an
// rdmafs load (perf: clear_page_erms; docs/PERFORMANCE-NOTES.md, loader),
// and a load with 8 workers needs 8 of its 16 buffers at a time.
type Ring struct {
	size  int64
	mem   []byte
	avail chan struct{} // a token per free buffer: on the stack or fresh
	mu    sync.Mutex
	stack [][]byte // free touched buffers, the last freed on top
	fresh int      // buffers handed out at least once; the rest are untouched
	once  sync.Once
}

// NewRing allocates count buffers of size bytes each, page aligned, and
// touches none of them yet.
func NewRing(count int, size int64) (*Ring, error) {
	if count <= 0 || size <= 0 {
		return nil, fmt.Errorf("ring of %d buffers of %d bytes: both must be positive", count, size)
	}
	mem, err := allocHostUntouched(count * int(size))
	if err != nil {
		return nil, err
	}
	r := &Ring{size: size, mem: mem, avail: make(chan struct{}, count), stack: make([][]byte, 0, count)}
	for range count {
		r.avail <- struct{}{}
	}
	return r, nil
}

// BufferSize is the size of each buffer: the largest chunk it takes.
func (r *Ring) BufferSize() int64 { return r.size }

// Count is the number of buffers.
func (r *Ring) Count() int { return cap(r.avail) }

// free is the number of buffers free.
func (r *Ring) free() int { return len(r.avail) }

// touched is the number of buffers handed out at least once.
func (r *Ring) touched() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fresh
}

func (r *Ring) put(b []byte) {
	r.mu.Lock()
	r.stack = append(r.stack, b)
	r.mu.Unlock()
	r.avail <- struct{}{}
}

// Kind returns "ring".
func (r *Ring) Kind() string { return "ring" }

// Span waits for a free buffer and hands out the one freed last: it is the
// likeliest to be still in the CPU's cache, and the buffers a load does
// not need at once stay out of the cache altogether (handing them out in
// turn made a streaming load write to 64 MiB instead of the 32 its eight
// workers hold, and cost rdmafs throughput). Only when no touched
// buffer is free does it touch a fresh one. The destination offset
// is ignored: a ring keeps no bytes once they are committed.
func (r *Ring) Span(ctx context.Context, off, n int64) (Span, error) {
	if n > r.size {
		return Span{}, fmt.Errorf("ring: chunk of %d bytes exceeds its %d-byte buffers", n, r.size)
	}
	select {
	case <-r.avail:
	case <-ctx.Done():
		return Span{}, ctx.Err()
	}
	r.mu.Lock()
	var b []byte
	if k := len(r.stack); k > 0 {
		b, r.stack = r.stack[k-1], r.stack[:k-1]
		r.mu.Unlock()
	} else {
		i := int64(r.fresh)
		r.fresh++
		r.mu.Unlock()
		b = r.mem[i*r.size : (i+1)*r.size : (i+1)*r.size]
		prefault(b)
	}
	put := func() { r.put(b) }
	return Span{Buf: b[:n], Commit: func(context.Context) error { put(); return nil }, Abort: put}, nil
}

// Flush does nothing: committed bytes need no further work.
func (r *Ring) Flush(context.Context) error { return nil }

// Close frees the ring's memory. No load may use it afterwards.
func (r *Ring) Close() error {
	var err error
	r.once.Do(func() { err = FreeHost(r.mem) })
	return err
}
