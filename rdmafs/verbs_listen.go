//go:build rdma && linux

package rdmafs

// #include "verbs_helpers.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// pairTimeout bounds how long an accepted TCP stream waits for its queue
// pair.
const pairTimeout = 10 * time.Second

// verbsListener accepts TCP control streams and pairs each with the RC
// queue pair the same client connects through rdma_cm on port+1.
type verbsListener struct {
	tcp   net.Listener
	ch    *C.struct_rdma_event_channel
	id    *C.struct_rdma_cm_id
	ready chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu      sync.Mutex
	waiting map[string]chan *qpEndpoint          // cookie → TCP side waiting
	early   map[string]*qpEndpoint               // QP established before its TCP side asked
	pending map[*C.struct_rdma_cm_id]pendingPair // accepted, not yet ESTABLISHED
}

type pendingPair struct {
	cookie string
	ep     *qpEndpoint
}

func (verbsTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	tl, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	host, rport, err := rdmaPort(tl.Addr().String())
	if err != nil {
		tl.Close()
		return nil, err
	}
	l := &verbsListener{
		tcp: tl, ready: make(chan net.Conn), done: make(chan struct{}),
		waiting: map[string]chan *qpEndpoint{}, early: map[string]*qpEndpoint{},
		pending: map[*C.struct_rdma_cm_id]pendingPair{},
	}
	if err := l.listenCM(host, rport); err != nil {
		tl.Close()
		return nil, fmt.Errorf("rdma listen on %s:%s: %w", host, rport, err)
	}
	l.wg.Add(2)
	go l.cmLoop()
	go l.acceptLoop()
	return l, nil
}

func (l *verbsListener) listenCM(host, port string) error {
	l.ch = C.rdma_create_event_channel()
	if l.ch == nil {
		return errors.New("rdma_create_event_channel failed")
	}
	if rc := C.gdl_nonblock(l.ch); rc != 0 {
		return verbsErr("event channel", rc)
	}
	if C.rdma_create_id(l.ch, &l.id, nil, C.RDMA_PS_TCP) != 0 {
		return errors.New("rdma_create_id failed")
	}
	sa, err := resolve(host, port)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(sa))
	if C.rdma_bind_addr(l.id, (*C.struct_sockaddr)(unsafe.Pointer(sa))) != 0 {
		return errors.New("rdma_bind_addr failed (is an RDMA device bound to this address?)")
	}
	if C.rdma_listen(l.id, 128) != 0 {
		return errors.New("rdma_listen failed")
	}
	return nil
}

// cmLoop handles rdma_cm events: connect requests get a queue pair and are
// accepted; once ESTABLISHED the endpoint is handed to its TCP side.
func (l *verbsListener) cmLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.done:
			return
		default:
		}
		ev, err := waitEvent(l.ch, 200)
		if err != nil || ev == nil {
			continue
		}
		switch ev.typ {
		case C.RDMA_CM_EVENT_CONNECT_REQUEST:
			l.onConnect(ev)
		case C.RDMA_CM_EVENT_ESTABLISHED:
			l.mu.Lock()
			p, ok := l.pending[ev.id]
			delete(l.pending, ev.id)
			l.mu.Unlock()
			if ok {
				l.deliver(p.cookie, p.ep)
			}
		case C.RDMA_CM_EVENT_REJECTED, C.RDMA_CM_EVENT_CONNECT_ERROR, C.RDMA_CM_EVENT_UNREACHABLE:
			l.mu.Lock()
			p, ok := l.pending[ev.id]
			delete(l.pending, ev.id)
			l.mu.Unlock()
			if ok {
				p.ep.close()
			}
		}
	}
}

func (l *verbsListener) onConnect(ev *cmEvent) {
	ep := &qpEndpoint{id: ev.id}
	host, _, err := net.SplitHostPort(ev.priv)
	var peer [64]C.char
	if err == nil && C.gdl_peer_ip(ev.id, &peer[0], 64) == 0 && net.ParseIP(C.GoString(&peer[0])).Equal(net.ParseIP(host)) {
		if rc := C.gdl_setup_qp(ev.id, &ep.pd, &ep.cq); rc == 0 {
			if C.gdl_accept(ev.id) == 0 {
				l.mu.Lock()
				l.pending[ev.id] = pendingPair{cookie: ev.priv, ep: ep}
				l.mu.Unlock()
				return
			}
		}
	}
	// The cookie must name a TCP peer on the same host as the queue pair:
	// otherwise someone could pair their queue pair with another client's
	// stream and receive its data.
	C.rdma_reject(ev.id, nil, 0)
	ep.close()
}

func (l *verbsListener) deliver(cookie string, ep *qpEndpoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.waiting[cookie]; ok {
		delete(l.waiting, cookie)
		w <- ep
		return
	}
	if old := l.early[cookie]; old != nil {
		old.close()
	}
	l.early[cookie] = ep
}

func (l *verbsListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.tcp.Accept()
		if err != nil {
			return
		}
		go l.pair(c)
	}
}

// pair waits for the queue pair whose cookie is this stream's peer address.
func (l *verbsListener) pair(c net.Conn) {
	cookie := c.RemoteAddr().String()
	w := make(chan *qpEndpoint, 1)
	l.mu.Lock()
	if ep := l.early[cookie]; ep != nil {
		delete(l.early, cookie)
		w <- ep
	} else {
		l.waiting[cookie] = w
	}
	l.mu.Unlock()
	var ep *qpEndpoint
	select {
	case ep = <-w:
	case <-time.After(pairTimeout):
	case <-l.done:
	}
	if ep == nil {
		l.mu.Lock()
		delete(l.waiting, cookie)
		l.mu.Unlock()
		c.Close()
		return
	}
	sc := &verbsServerConn{Conn: c, ep: ep, mrs: map[uintptr]*C.struct_ibv_mr{}}
	select {
	case l.ready <- sc:
	case <-l.done:
		sc.Close()
	}
}

func (l *verbsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *verbsListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.tcp.Close()
		l.wg.Wait()
		l.mu.Lock()
		for _, ep := range l.early {
			ep.close()
		}
		for _, p := range l.pending {
			p.ep.close()
		}
		l.mu.Unlock()
		if l.id != nil {
			C.rdma_destroy_id(l.id)
		}
		if l.ch != nil {
			C.rdma_destroy_event_channel(l.ch)
		}
	})
	return nil
}

func (l *verbsListener) Addr() net.Addr { return l.tcp.Addr() }

// verbsServerConn is the server end: frames on TCP, data by RDMA WRITE from
// pool buffers, registered on first use and kept for the connection.
type verbsServerConn struct {
	net.Conn
	ep     *qpEndpoint
	mu     sync.Mutex
	mrs    map[uintptr]*C.struct_ibv_mr
	pinner runtime.Pinner
	broken error
	once   sync.Once
}

// WriteRegion RDMA-WRITEs p to r.Addr+off and waits for the completion. The
// range is checked first: a write the client's NIC refuses moves the queue
// pair to the error state, after which this connection is dropped.
func (c *verbsServerConn) WriteRegion(r Region, off uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if off > r.Len || uint64(len(p)) > r.Len-off {
		return fmt.Errorf("write [%d, +%d) outside region of %d bytes: %w", off, len(p), r.Len, ErrRegion)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	base := p[:cap(p)]
	key := uintptr(unsafe.Pointer(&base[0]))
	mr := c.mrs[key]
	if mr == nil {
		c.pinner.Pin(&base[0])
		var err error
		if mr, err = c.ep.regMR(base); err != nil {
			return err
		}
		c.mrs[key] = mr
	}
	if err := c.ep.write(mr, p, r.Addr+off, r.Key, rdmaTimeoutMs); err != nil {
		c.broken = fmt.Errorf("%w: %v; queue pair unusable, connection dropped", ErrRegion, err)
		c.Conn.Close()
		return c.broken
	}
	return nil
}

func (c *verbsServerConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		// Memory regions first: a protection domain with regions left in
		// it cannot be freed.
		for k, mr := range c.mrs {
			deregMR(mr)
			delete(c.mrs, k)
		}
		c.ep.close()
		c.pinner.Unpin()
		c.broken = fmt.Errorf("%w: connection closed", ErrRegion)
		c.mu.Unlock()
	})
	return c.Conn.Close()
}
