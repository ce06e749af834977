package loader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gdsload/gdsload/cufile"
)

// pinnedRing lands chunks in GPU memory through a bounded set of pinned
// host buffers: a worker fills a buffer, Commit queues its copy to the
// device and records an event, and the buffer returns to the free list
// only once that event completed. Reads into free buffers overlap with the
// copies of full ones. The buffers are allocated once and reused by every
// load until close.
type pinnedRing struct {
	mem      *gpuMemory
	size     int64 // bytes per buffer: the largest chunk
	stream   *cufile.Stream
	slots    []*ringSlot
	free     chan *ringSlot
	inflight chan *ringSlot // copies queued, in queue order
	reaped   chan struct{}  // closed when the reaper has stopped

	mu  sync.Mutex
	err error // first failed copy; sticky (CUDA errors poison the context)
}

type ringSlot struct {
	buf *cufile.PinnedBuffer
	ev  *cufile.Event
}

// newPinnedRing allocates count pinned buffers of size bytes for mem.
func newPinnedRing(mem *gpuMemory, count int, size int64) (_ *pinnedRing, err error) {
	if count < 2 || size <= 0 {
		return nil, fmt.Errorf("pinned ring of %d buffers of %d bytes: want at least 2 buffers of positive size", count, size)
	}
	r := &pinnedRing{
		mem: mem, size: size,
		free:     make(chan *ringSlot, count),
		inflight: make(chan *ringSlot, count),
		reaped:   make(chan struct{}),
	}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	if r.stream, err = mem.dev.NewStream(); err != nil {
		return nil, err
	}
	for range count {
		s := &ringSlot{}
		r.slots = append(r.slots, s)
		if s.buf, err = mem.dev.AllocPinned(int(size)); err != nil {
			return nil, fmt.Errorf("pinned ring of %d × %d bytes: %w", count, size, err)
		}
		if s.ev, err = mem.dev.NewEvent(); err != nil {
			return nil, err
		}
		r.free <- s
	}
	go r.reap()
	return r, nil
}

// reap waits for each queued copy in order and recycles its buffer.
func (r *pinnedRing) reap() {
	defer close(r.reaped)
	for s := range r.inflight {
		if err := s.ev.Synchronize(); err != nil {
			r.setErr(err)
		}
		r.free <- s
	}
}

func (r *pinnedRing) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = fmt.Errorf("copy to %s failed: %w", r.mem.kind(), err)
	}
}

func (r *pinnedRing) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// span waits for a free buffer for destination bytes [off, off+n).
func (r *pinnedRing) span(ctx context.Context, off, n int64) (Span, error) {
	if err := r.mem.check(off, n); err != nil {
		return Span{}, err
	}
	if n > r.size {
		return Span{}, fmt.Errorf("%s destination: chunk of %d bytes exceeds its %d-byte pinned buffers; raise the chunk size given to the destination", r.mem.kind(), n, r.size)
	}
	if err := r.failed(); err != nil {
		return Span{}, err
	}
	var s *ringSlot
	select {
	case s = <-r.free:
	case <-ctx.Done():
		return Span{}, context.Cause(ctx)
	}
	var once sync.Once
	put := func() { once.Do(func() { r.free <- s }) }
	return Span{
		Buf:    s.buf.Bytes()[:n:n],
		Commit: func(context.Context) error { return r.commit(s, off, n, put) },
		Abort:  put,
	}, nil
}

// commit queues the copy of s's first n bytes to destination offset off.
// It runs on a thread with the ring's device current, as CUDA wants.
func (r *pinnedRing) commit(s *ringSlot, off, n int64, put func()) error {
	dst := r.mem.ptr() + cufile.DevicePtr(off)
	err := r.mem.dev.Do(func() error {
		if err := r.stream.CopyToDeviceAsync(dst, s.buf, 0, int(n)); err != nil {
			return err
		}
		if err := s.ev.Record(r.stream); err != nil {
			// Without an event the buffer is only safe once the stream
			// drained.
			return errors.Join(err, r.stream.Synchronize())
		}
		return nil
	})
	if err != nil {
		put()
		return err
	}
	r.inflight <- s // never blocks: it holds at most every slot
	return nil
}

// flush waits until every buffer is back: all spans committed or aborted
// and all copies done. It returns the first copy error.
func (r *pinnedRing) flush(ctx context.Context) error {
	taken := make([]*ringSlot, 0, len(r.slots))
	defer func() {
		for _, s := range taken {
			r.free <- s
		}
	}()
	for len(taken) < len(r.slots) {
		select {
		case s := <-r.free:
			taken = append(taken, s)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return r.failed()
}

// close waits for the copies in flight and frees the ring.
func (r *pinnedRing) close() error {
	err := r.flush(context.Background())
	close(r.inflight)
	<-r.reaped
	return errors.Join(err, r.release())
}

// release frees what the ring holds; used by close and by a failed new.
func (r *pinnedRing) release() error {
	var errs []error
	for _, s := range r.slots {
		if s.ev != nil {
			errs = append(errs, s.ev.Destroy())
		}
		if s.buf != nil {
			errs = append(errs, s.buf.Free())
		}
	}
	if r.stream != nil {
		errs = append(errs, r.stream.Destroy())
	}
	return errors.Join(errs...)
}

// lazyRing is the pinned ring of a GPU destination that is reused across
// loads: made on first need (or up front, by a first get), freed by
// settle, made again by the next Span. It is safe for concurrent use.
type lazyRing struct {
	gpu     *gpuMemory // the destination the ring copies into
	buffers int
	chunk   int64

	mu   sync.Mutex
	ring *pinnedRing // nil until the first get and after settle
}

// BufferSize is the size of each pinned buffer: the largest chunk the
// destination takes.
func (l *lazyRing) BufferSize() int64 { return l.chunk }

// get returns the ring, making it when there is none.
func (l *lazyRing) get() (*pinnedRing, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ring == nil {
		r, err := newPinnedRing(l.gpu, l.buffers, l.chunk)
		if err != nil {
			return nil, err
		}
		l.ring = r
	}
	return l.ring, nil
}

// Span waits for a free pinned buffer for destination bytes [off, off+n);
// its Commit queues the copy to the device.
func (l *lazyRing) Span(ctx context.Context, off, n int64) (Span, error) {
	r, err := l.get()
	if err != nil {
		return Span{}, err
	}
	return r.span(ctx, off, n)
}

// Flush waits until every committed span is in device memory.
func (l *lazyRing) Flush(ctx context.Context) error {
	l.mu.Lock()
	r := l.ring
	l.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.flush(ctx)
}

// ReadBack flushes, then copies device bytes [off, off+len(p)) into p.
func (l *lazyRing) ReadBack(ctx context.Context, off int64, p []byte) error {
	if err := l.Flush(ctx); err != nil {
		return err
	}
	return l.gpu.readBack(ctx, off, p)
}

// settle waits for the copies in flight and frees the pinned buffers.
func (l *lazyRing) settle() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ring == nil {
		return nil
	}
	err := l.ring.close()
	l.ring = nil
	return err
}
