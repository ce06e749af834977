package rdmafs

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// Loopback is an in-process region transport for tests. It reproduces the
// RDMA semantics of the verbs transport: each connection has its own region
// table (a protection domain); the client registers destination buffers and
// gets a key; the server writes into a region only by that key and only
// inside its range; a deregistered region can no longer be written.
//
// The control stream is a net.Pipe. A Loopback is safe for concurrent use.
type Loopback struct {
	mu        sync.Mutex
	listeners map[string]*loopListener
}

// NewLoopback returns an empty loopback transport; listeners are named by
// the addr passed to Listen.
func NewLoopback() *Loopback { return &Loopback{listeners: map[string]*loopListener{}} }

// Name returns "loopback".
func (*Loopback) Name() string { return "loopback" }

// Listen registers a listener under addr.
func (l *Loopback) Listen(_ context.Context, addr string) (net.Listener, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.listeners[addr]; ok {
		return nil, fmt.Errorf("loopback listen %s: address in use", addr)
	}
	ln := &loopListener{owner: l, addr: loopAddr(addr), conns: make(chan net.Conn), done: make(chan struct{})}
	l.listeners[addr] = ln
	return ln, nil
}

// Dial connects to the listener named addr.
func (l *Loopback) Dial(ctx context.Context, addr string) (net.Conn, error) {
	l.mu.Lock()
	ln := l.listeners[addr]
	l.mu.Unlock()
	if ln == nil {
		return nil, fmt.Errorf("loopback dial %s: connection refused", addr)
	}
	cs, ss := net.Pipe()
	t := newRegionTable()
	client := &loopClientConn{Conn: cs, table: t}
	server := &loopServerConn{Conn: ss, table: t}
	select {
	case ln.conns <- server:
		return client, nil
	case <-ln.done:
		return nil, fmt.Errorf("loopback dial %s: connection refused", addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type loopAddr string

func (a loopAddr) Network() string { return "loopback" }
func (a loopAddr) String() string  { return string(a) }

type loopListener struct {
	owner *Loopback
	addr  loopAddr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (ln *loopListener) Accept() (net.Conn, error) {
	select {
	case c := <-ln.conns:
		return c, nil
	case <-ln.done:
		return nil, net.ErrClosed
	}
}

func (ln *loopListener) Close() error {
	ln.once.Do(func() {
		close(ln.done)
		ln.owner.mu.Lock()
		delete(ln.owner.listeners, string(ln.addr))
		ln.owner.mu.Unlock()
	})
	return nil
}

func (ln *loopListener) Addr() net.Addr { return ln.addr }

// loopClientConn is the client end: it registers regions.
type loopClientConn struct {
	net.Conn
	table *regionTable
}

func (c *loopClientConn) Register(p []byte) (Region, error) { return c.table.register(p) }
func (c *loopClientConn) Deregister(r Region) error         { return c.table.deregister(r) }

// loopServerConn is the server end: it writes into the client's regions.
type loopServerConn struct {
	net.Conn
	table *regionTable
}

func (c *loopServerConn) WriteRegion(r Region, off uint64, p []byte) error {
	return c.table.write(r, off, p)
}
