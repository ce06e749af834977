package rdmafs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// verbsClientConn is the client end of a verbs connection: the TCP
// control connection, and after the handshake a queue pair of its own
// (own protection domain: a region registered for this connection can be
// written through its queue pair only). Until the queue pair is up,
// reads and writes use TCP (the handshake). Afterwards requests still go
// on TCP and everything the server sends arrives as SENDs into receive
// buffers posted before connecting; Read returns those bytes in order.
type verbsClientConn struct {
	net.Conn
	t    *verbsTransport
	addr string

	mu       sync.Mutex
	ch       cmChannel
	events   chan cmEvent
	pumpDone chan struct{}
	id       cmID
	pd       rdmaPD
	ep       *qpEndpoint
	slab     []byte
	slabMR   rdmaMR
	pins     *runtime.Pinner
	regs     map[uint32]*clientRegion
	// live maps the identifier of a queue pair connecting or connected to
	// its endpoint, so that a disconnect is never missed.
	live   map[uintptr]*qpEndpoint
	broken error
	closed bool
	once   sync.Once
	// Read's state: the unread part of the current message and its slot.
	cur      []byte
	curSlot  int
	rdl      time.Time
	readLock sync.Mutex
}

// clientRegion is a registered destination; Go memory stays pinned while
// the device may write into it.
type clientRegion struct {
	mr   rdmaMR
	addr uint64
	n    uint64
	pin  *runtime.Pinner
}

func newVerbsClientConn(t *verbsTransport, c net.Conn, addr string) *verbsClientConn {
	return &verbsClientConn{Conn: c, t: t, addr: addr, regs: map[uint32]*clientRegion{}, live: map[uintptr]*qpEndpoint{}, curSlot: -1}
}

// connectQueuePair connects the queue pair of session s to the server:
// from the address the TCP connection uses, to the address it reached
// first, then to every other address of the server's name, until one
// connects.
func (c *verbsClientConn) connectQueuePair(ctx context.Context, s pairingSession) error {
	local, err := tcpAddrPort(c.Conn.LocalAddr())
	if err != nil {
		return err
	}
	remote, err := tcpAddrPort(c.Conn.RemoteAddr())
	if err != nil {
		return err
	}
	dsts, err := c.candidates(ctx, remote)
	if err != nil {
		return err
	}
	if err := c.startEvents(); err != nil {
		return err
	}
	src := netip.AddrPortFrom(local.Addr(), 0)
	var errs []error
	for _, dst := range dsts {
		err := c.tryConnect(ctx, src, dst, s.encode())
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", dst, err))
		var re *rejectError
		if ctx.Err() != nil || errors.As(err, &re) && re.reason != 0 || errors.Is(err, syscall.ENOMEM) {
			break // the rdmafs server answered, or this side cannot: other addresses will not do better
		}
	}
	return fmt.Errorf("connect queue pair from %s: %w", src.Addr(), errors.Join(errs...))
}

// candidates lists where to connect the queue pair: the TCP peer's
// address first, then the other addresses of the host named in the dial
// address, all at port + 1.
func (c *verbsClientConn) candidates(ctx context.Context, remote netip.AddrPort) ([]netip.AddrPort, error) {
	first, err := rdmaAddr(remote)
	if err != nil {
		return nil, err
	}
	out := []netip.AddrPort{first}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return out, nil
	}
	addrs, err := c.t.opts.lookup(ctx, host)
	if err != nil {
		return out, nil // the TCP peer's address is enough
	}
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), first.Port())
		dup := false
		for _, o := range out {
			dup = dup || o == ap
		}
		// rdma_cm cannot route between families from the bound source.
		if !dup && ap.Addr().Is4() == first.Addr().Is4() {
			out = append(out, ap)
		}
	}
	return out, nil
}

// startEvents creates the connection's event channel and a goroutine
// that forwards its events.
func (c *verbsClientConn) startEvents() error {
	ch, err := c.t.stack.newEventChannel()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.ch, c.events, c.pumpDone = ch, make(chan cmEvent, 16), make(chan struct{})
	c.mu.Unlock()
	go func() {
		defer close(c.pumpDone)
		var delay time.Duration
		for {
			ev, err := ch.next()
			if errors.Is(err, errChannelClosed) {
				return
			}
			if err != nil {
				delay = min(max(2*delay, 10*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			delay = 0
			c.mu.Lock()
			ep := c.live[idKey(ev.id)]
			c.mu.Unlock()
			if ep != nil && (ev.kind == evDisconnected || ev.kind == evDeviceRemoval) {
				ep.fail(fmt.Errorf("queue pair: %s", ev.kind))
			}
			select {
			case c.events <- ev:
			default: // nobody waits for it: a stale attempt's event
			}
		}
	}()
	return nil
}

func idKey(id cmID) uintptr {
	if id == nil {
		return 0
	}
	return id.key()
}

// rejectError is a queue pair the server refused.
type rejectError struct {
	reason byte
	status int
}

func (e *rejectError) Error() string {
	if e.reason == 0 {
		return fmt.Sprintf("rejected (status %d): no rdmafs server on that port, or not verbs", e.status)
	}
	return "rejected: " + rejectText(e.reason)
}

func (e *rejectError) Is(target error) bool { return target == errQueuePairRejected }

// await waits for the event of id that ends a step: want, or a failure.
func (c *verbsClientConn) await(ctx context.Context, id cmID, want cmEventKind) error {
	t := time.NewTimer(c.t.opts.resolveTimeout + time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-c.events:
			if ev.id == nil || ev.id.key() != id.key() {
				continue
			}
			switch ev.kind {
			case want:
				return nil
			case evRejected:
				r, _ := parseReject(ev.priv)
				return &rejectError{reason: r, status: ev.status}
			}
			return fmt.Errorf("rdma_cm: %s (status %d) instead of %s", ev.kind, ev.status, want)
		case <-t.C:
			return fmt.Errorf("rdma_cm: no %s within %v", want, c.t.opts.resolveTimeout+time.Second)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryConnect connects the queue pair to one address.
func (c *verbsClientConn) tryConnect(ctx context.Context, src, dst netip.AddrPort, priv []byte) (err error) {
	o := &c.t.opts
	id, err := c.ch.createID()
	if err != nil {
		return err
	}
	var (
		pd   rdmaPD
		ep   *qpEndpoint
		slab []byte
		mr   rdmaMR
		pins = new(runtime.Pinner)
	)
	defer func() {
		if err == nil {
			return
		}
		if ep != nil {
			ep.close()
		}
		keep := false
		if mr != nil && mr.dereg() != nil {
			c.t.leak(pins) // the receive buffers stay registered: keep them
			keep = true
		} else {
			pins.Unpin()
		}
		if pd != nil && !keep {
			_ = pd.dealloc()
		}
		_ = id.destroy()
	}()
	if err := id.resolveAddr(src, dst, o.resolveTimeout); err != nil {
		return err
	}
	if err := c.await(ctx, id, evAddrResolved); err != nil {
		return err
	}
	if err := id.resolveRoute(o.resolveTimeout); err != nil {
		return err
	}
	if err := c.await(ctx, id, evRouteResolved); err != nil {
		return err
	}
	dev := id.device()
	if dev == nil {
		return errors.New("address resolved to no RDMA device")
	}
	if pd, err = dev.allocPD(); err != nil {
		return fmt.Errorf("RDMA device %s: %w", dev.name(), err)
	}
	if ep, err = newEndpoint(c.t, id, dev, pd, 1, o.recvSlots); err != nil {
		return err
	}
	slab = make([]byte, o.recvSlots*slotSize)
	pins.Pin(&slab[0])
	if mr, err = pd.regMR(slab, accessLocalWrite); err != nil {
		mr = nil
		return memlockError("RDMA device "+dev.name()+": receive buffers", len(slab), err)
	}
	// Receives first: the server may send as soon as it is connected.
	for i := range o.recvSlots {
		if err := ep.postRecv(recvBit|uint64(i), addrOf(slab[i*slotSize:]), slotSize, mr.lkey()); err != nil {
			return err
		}
	}
	ep.start()
	c.mu.Lock()
	c.live[id.key()] = ep
	c.mu.Unlock()
	defer func() {
		if err != nil {
			c.mu.Lock()
			delete(c.live, id.key())
			c.mu.Unlock()
		}
	}()
	if err := id.connect(priv, connParams{}); err != nil {
		return err
	}
	if err := c.await(ctx, id, evEstablished); err != nil {
		return err
	}
	ep.setOnBreak(func(err error) {
		c.mu.Lock()
		if c.broken == nil {
			c.broken = err
		}
		c.mu.Unlock()
	})
	c.mu.Lock()
	c.id, c.pd, c.ep, c.slab, c.slabMR, c.pins = id, pd, ep, slab, mr, pins
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errors.New("connection closed while connecting")
	}
	go c.watchTCP()
	return nil
}

// watchTCP ends the connection when the server closes TCP, or breaks the
// protocol by sending on it after pairing.
func (c *verbsClientConn) watchTCP() {
	var b [1]byte
	n, err := c.Conn.Read(b[:])
	c.mu.Lock()
	ep := c.ep
	c.mu.Unlock()
	switch {
	case n > 0:
		ep.fail(fmt.Errorf("%w: the server sent on TCP after pairing the queue pair", ErrProtocol))
	case errors.Is(err, io.EOF):
		ep.fail(errors.New("the server closed the TCP connection"))
	default:
		ep.fail(fmt.Errorf("TCP connection: %w", err))
	}
}

func (c *verbsClientConn) endpoint() *qpEndpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ep
}

func (c *verbsClientConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *verbsClientConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// Read reads from TCP before pairing and from the queue pair after.
func (c *verbsClientConn) Read(p []byte) (int, error) {
	ep := c.endpoint()
	if ep == nil {
		return c.Conn.Read(p)
	}
	c.readLock.Lock()
	defer c.readLock.Unlock()
	for len(c.cur) == 0 {
		if c.curSlot >= 0 {
			if err := c.repost(ep, c.curSlot); err != nil {
				return 0, err
			}
			c.curSlot = -1
		}
		c.mu.Lock()
		dl := c.rdl
		c.mu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			t := time.NewTimer(time.Until(dl))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case wc := <-ep.recvs:
			if wc.status != wcSuccess {
				return 0, c.readErr(ep)
			}
			slot := int(wc.id &^ recvBit)
			c.cur, c.curSlot = c.slab[slot*slotSize:slot*slotSize+int(wc.byteLen)], slot
		case <-ep.brokenCh:
			return 0, c.readErr(ep)
		case <-timeout:
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

func (c *verbsClientConn) readErr(ep *qpEndpoint) error {
	if err := ep.err(); err != nil {
		return err
	}
	return errors.New("queue pair failed: the server ended it (receives flushed)")
}

func (c *verbsClientConn) repost(ep *qpEndpoint, slot int) error {
	buf := c.slab[slot*slotSize:]
	if err := ep.postRecv(recvBit|uint64(slot), addrOf(buf), slotSize, c.slabMR.lkey()); err != nil {
		ep.fail(err)
		return err
	}
	return nil
}

// Register makes p writable through this connection's queue pair.
func (c *verbsClientConn) Register(p []byte) (Region, error) {
	if len(p) == 0 {
		return Region{}, nil
	}
	pin := new(runtime.Pinner)
	pin.Pin(&p[0])
	r, err := c.register(addrOf(p), uint64(len(p)), pin, func(pd rdmaPD) (rdmaMR, error) {
		return pd.regMR(p, accessLocalWrite|accessRemoteWrite)
	})
	if err != nil {
		pin.Unpin()
		return Region{}, fmt.Errorf("%w: %v", ErrRegion, memlockError("register the read's destination", len(p), err))
	}
	return r, nil
}

// register records a registration made by reg with the connection's
// protection domain.
func (c *verbsClientConn) register(addr, n uint64, pin *runtime.Pinner, reg func(rdmaPD) (rdmaMR, error)) (Region, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pd == nil || c.closed {
		return Region{}, errors.New("connection has no queue pair (closed?)")
	}
	if c.broken != nil {
		return Region{}, c.broken
	}
	mr, err := reg(c.pd)
	if err != nil {
		return Region{}, err
	}
	c.regs[mr.rkey()] = &clientRegion{mr: mr, addr: addr, n: n, pin: pin}
	return Region{Addr: addr, Len: n, Key: mr.rkey()}, nil
}

// Deregister revokes r. If the device refuses to deregister, the queue
// pair is failed first, so nothing can write into the memory any more, and
// the memory stays pinned for ever.
func (c *verbsClientConn) Deregister(rg Region) error {
	if rg.Len == 0 {
		return nil
	}
	c.mu.Lock()
	r := c.regs[rg.Key]
	if r == nil || r.addr != rg.Addr {
		c.mu.Unlock()
		return fmt.Errorf("deregister key 0x%08x: %w: not registered", rg.Key, ErrRegion)
	}
	delete(c.regs, rg.Key)
	ep := c.ep
	c.mu.Unlock()
	return c.release(r, ep)
}

func (c *verbsClientConn) release(r *clientRegion, ep *qpEndpoint) error {
	err := r.mr.dereg()
	if err == nil {
		if r.pin != nil {
			r.pin.Unpin()
		}
		return nil
	}
	// The device may still write into the memory: stop the queue pair
	// (the only way in, this domain being the connection's own) and keep
	// the memory pinned.
	if ep != nil {
		ep.fail(fmt.Errorf("%w: deregistration failed: %v", ErrRegion, err))
		ep.destroyQP()
	}
	if r.pin != nil {
		c.t.leak(r.pin)
	}
	return fmt.Errorf("deregister key 0x%08x: %w: %v; the connection's queue pair was shut so the device can no longer write there",
		r.mr.rkey(), ErrRegion, err)
}

// Close frees the queue pair, registrations and channel, then closes TCP.
func (c *verbsClientConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		ep, id, pd, ch := c.ep, c.id, c.pd, c.ch
		regs := c.regs
		c.regs = map[uint32]*clientRegion{}
		c.mu.Unlock()
		if ep != nil {
			_ = id.disconnect()
			ep.close()
		}
		leaked := false
		for _, r := range regs {
			if c.release(r, nil) != nil {
				leaked = true
			}
		}
		if c.slabMR != nil {
			if c.slabMR.dereg() != nil {
				c.t.leak(c.pins)
				leaked = true
			} else {
				c.pins.Unpin()
			}
		}
		if pd != nil && !leaked {
			_ = pd.dealloc()
		}
		if id != nil {
			_ = id.destroy()
		}
		if ch != nil {
			ch.interrupt()
			<-c.pumpDone
			ch.destroy()
		}
	})
	return c.Conn.Close()
}
