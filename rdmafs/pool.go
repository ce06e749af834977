package rdmafs

import "context"

// bufPool is a fixed set of fixed-size buffers allocated and touched once.
// It bounds the server's data memory whatever clients ask: a READ holds at
// most one buffer at a time and waits when all are out.
type bufPool struct {
	free chan []byte
	size int
	all  [][]byte
}

func newBufPool(n, size int) *bufPool {
	p := &bufPool{free: make(chan []byte, n), size: size}
	for range n {
		b := make([]byte, size)
		// Pre-touch: first-touch page faults belong at start-up, not on the
		// first reads.
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0
		}
		p.free <- b
		p.all = append(p.all, b)
	}
	return p
}

// buffers lists every buffer of the pool (for registration with RDMA
// devices).
func (p *bufPool) buffers() [][]byte { return p.all }

// get waits for a free buffer or for ctx.
func (p *bufPool) get(ctx context.Context) ([]byte, error) {
	select {
	case b := <-p.free:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put returns a buffer obtained from get.
func (p *bufPool) put(b []byte) { p.free <- b[:p.size] }

// inUse is the number of buffers handed out.
func (p *bufPool) inUse() int { return cap(p.free) - len(p.free) }
