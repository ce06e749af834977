package loader

import (
	"context"
	"fmt"
	"sync"
)

// Ring is a Destination for streaming loads: a bounded set of reused,
// pre-touched host buffers that chunks land in and are released from once
// committed (and, when a checksum is asked for, hashed). It is what
// `gdsload load --to host` uses, like gdsio's CPUONLY mode: memory stays
// bounded by count × size whatever the file sizes, and nothing is allocated
// per load. A Ring is reused across loads; Close frees its memory.
type Ring struct {
	size    int64
	mem     []byte
	avail   chan struct{} // a token per buffer on the stack
	mu      sync.Mutex
	stack   [][]byte      // free buffers, the last freed on top
	touched chan struct{} // closed once every buffer is touched and free
	once    sync.Once
}

// NewRing allocates count buffers of size bytes each, page aligned. It
// returns at once: the buffers are touched (their first-touch page faults
// taken) one after the other in the background, and each is handed out
// only once touched, so a load starts on the first buffer while the
// others are prepared (touching 64 MiB takes 7 to 20 ms on a development
// VM, and 150 ms when the kernel compacts memory for huge pages).
func NewRing(count int, size int64) (*Ring, error) {
	if count <= 0 || size <= 0 {
		return nil, fmt.Errorf("ring of %d buffers of %d bytes: both must be positive", count, size)
	}
	mem, err := allocHostUntouched(count * int(size))
	if err != nil {
		return nil, err
	}
	r := &Ring{size: size, mem: mem, avail: make(chan struct{}, count), stack: make([][]byte, 0, count), touched: make(chan struct{})}
	go func() {
		defer close(r.touched)
		for i := range count {
			b := mem[int64(i)*size : int64(i+1)*size : int64(i+1)*size]
			prefault(b)
			r.put(b)
		}
	}()
	return r, nil
}

// BufferSize is the size of each buffer: the largest chunk it takes.
func (r *Ring) BufferSize() int64 { return r.size }

// Count is the number of buffers.
func (r *Ring) Count() int { return cap(r.avail) }

// free is the number of buffers free.
func (r *Ring) free() int { return len(r.avail) }

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
// workers hold, and cost 3% of rdmafs throughput). The destination offset
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
	b := r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
	r.mu.Unlock()
	put := func() { r.put(b) }
	return Span{Buf: b[:n], Commit: func(context.Context) error { put(); return nil }, Abort: put}, nil
}

// Flush does nothing: committed bytes need no further work.
func (r *Ring) Flush(context.Context) error { return nil }

// Close frees the ring's memory, once its buffers are all touched. No load
// may use it afterwards.
func (r *Ring) Close() error {
	var err error
	r.once.Do(func() {
		<-r.touched
		err = FreeHost(r.mem)
	})
	return err
}
