package rdmafs

import (
	"context"
	"sync"
)

// bufPool is a fixed set of fixed-size buffers allocated and touched once.
// It bounds the server's data memory whatever clients ask: a READ holds at
// most one buffer at a time and waits when all are out. Buffers are handed
// out last in, first out: the one returned most recently is the likeliest
// to be still in the CPU's cache.
type bufPool struct {
	sem  chan struct{} // a token per free buffer
	mu   sync.Mutex
	free [][]byte // a stack
	size int
	all  [][]byte
}

func newBufPool(n, size int) *bufPool {
	p := &bufPool{sem: make(chan struct{}, n), free: make([][]byte, 0, n), size: size}
	for range n {
		b := make([]byte, size)
		// Pre-touch: first-touch page faults belong at start-up, not on the
		// first reads.
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0
		}
		p.free = append(p.free, b)
		p.all = append(p.all, b)
		p.sem <- struct{}{}
	}
	return p
}

// buffers lists every buffer of the pool (for registration with RDMA
// devices).
func (p *bufPool) buffers() [][]byte { return p.all }

// get waits for a free buffer or for ctx.
func (p *bufPool) get(ctx context.Context) ([]byte, error) {
	select {
	case <-p.sem:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return b, nil
}

// put returns a buffer obtained from get.
func (p *bufPool) put(b []byte) {
	p.mu.Lock()
	p.free = append(p.free, b[:p.size])
	p.mu.Unlock()
	p.sem <- struct{}{}
}

// count is the number of buffers.
func (p *bufPool) count() int { return cap(p.sem) }

// inUse is the number of buffers handed out.
func (p *bufPool) inUse() int { return cap(p.sem) - len(p.sem) }
