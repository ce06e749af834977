package rdmafs

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
	"unsafe"
)

// verbsServerConn is the server end of a verbs connection: the TCP
// control connection and, once the session paired, its queue pair. Until
// then reads and writes use TCP (the handshake). Afterwards the client's
// frames still arrive on TCP, while every frame to the client goes as
// SENDs on the queue pair, behind the RDMA WRITEs of the data: a
// READ_DONE can never overtake the data it completes.
type verbsServerConn struct {
	net.Conn
	l *verbsListener

	mu        sync.Mutex
	ep        *serverEndpoint
	wdeadline time.Time
	closed    bool
	once      sync.Once
}

// expectQueuePair registers the session before WELCOME is sent.
func (c *verbsServerConn) expectQueuePair(s pairingSession) (func(time.Time) error, func(), error) {
	p, err := c.l.expect(s)
	if err != nil {
		return nil, nil, err
	}
	cancel := func() {
		c.l.withdraw(p)
		if !p.abandon() && p.ep != nil {
			c.l.dropEndpoint(p.ep, errors.New("handshake abandoned"))
		}
	}
	wait := func(deadline time.Time) error {
		if p.expires.Before(deadline) {
			deadline = p.expires
		}
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			c.l.withdraw(p)
			if p.abandon() {
				return errors.New("the client's queue pair did not connect in time")
			}
		}
		if p.err != nil {
			return fmt.Errorf("queue pair: %w", p.err)
		}
		return c.attach(p.ep)
	}
	return wait, cancel, nil
}

// attach makes ep this connection's queue pair.
func (c *verbsServerConn) attach(ep *serverEndpoint) error {
	c.l.mu.Lock()
	ep.conn = c
	c.l.mu.Unlock()
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.ep = ep
	}
	c.mu.Unlock()
	if closed {
		c.l.closeEndpoint(ep)
		return errors.New("connection closed while pairing")
	}
	// A broken queue pair ends the connection: the client sees the TCP
	// stream close and retries on a new one.
	ep.setOnBreak(func(error) { c.Conn.Close() })
	return nil
}

func (c *verbsServerConn) endpoint() *serverEndpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ep
}

// SetDeadline and SetWriteDeadline also bound SENDs on the queue pair.
func (c *verbsServerConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdeadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *verbsServerConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdeadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *verbsServerConn) writeDeadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wdeadline.IsZero() {
		return time.Now().Add(c.l.t.opts.writeTimeout)
	}
	return c.wdeadline
}

// Write sends p: on TCP before pairing, as SENDs on the queue pair after.
func (c *verbsServerConn) Write(p []byte) (int, error) {
	ep := c.endpoint()
	if ep == nil {
		return c.Conn.Write(p)
	}
	deadline := c.writeDeadline()
	sd := ep.dev
	done := 0
	for done < len(p) {
		var slot int
		select {
		case slot = <-sd.slots:
		case <-ep.brokenCh:
			return done, fmt.Errorf("write to client: %w", ep.err())
		case <-time.After(time.Until(deadline)):
			return done, fmt.Errorf("write to client: no frame buffer free by the write deadline")
		}
		buf := sd.ctrl[slot*slotSize : (slot+1)*slotSize]
		n := copy(buf, p[done:])
		err := ep.run(workRequest{op: wrSend, addr: addrOf(buf), n: uint32(n), lkey: sd.ctrlMR.lkey()}, deadline, "SEND")
		sd.slots <- slot
		if err != nil {
			return done, fmt.Errorf("write to client: %w", err)
		}
		done += n
	}
	return done, nil
}

// WriteRegion RDMA-WRITEs p, a server buffer, to the client's region r at
// off and waits for the completion; the frames the server sends after it
// travel behind it on the same queue pair. A write the client refuses
// (bad key, deregistered region) fails the queue pair and so the
// connection. Whatever it returns, the device is done with p.
func (c *verbsServerConn) WriteRegion(r Region, off uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if off > r.Len || uint64(len(p)) > r.Len-off {
		return fmt.Errorf("write [%d, +%d) outside region of %d bytes: %w", off, len(p), r.Len, ErrRegion)
	}
	ep := c.endpoint()
	if ep == nil {
		return fmt.Errorf("%w: no queue pair on this connection", ErrRegion)
	}
	mr, err := c.l.poolMR(ep.dev, p)
	if err != nil {
		return err
	}
	err = ep.run(workRequest{op: wrWrite, addr: addrOf(p), n: uint32(len(p)), lkey: mr.lkey(),
		raddr: r.Addr + off, rkey: r.Key}, time.Now().Add(c.l.t.opts.writeTimeout), "RDMA WRITE")
	if err == nil {
		return nil
	}
	// A failed WRITE has failed the queue pair, which closes the
	// connection (attach's onBreak).
	var wce *wcError
	if errors.As(err, &wce) && wce.status == wcRemAccessErr {
		return fmt.Errorf("%w: the client's device refused the write (key 0x%08x, [0x%x, +%d)): %v; queue pair failed, connection dropped",
			ErrRegion, r.Key, r.Addr+off, len(p), err)
	}
	return err
}

func addrOf(p []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&p[0]))) }

// Close frees the queue pair, then closes TCP.
func (c *verbsServerConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		ep := c.ep
		c.mu.Unlock()
		if ep != nil {
			c.l.closeEndpoint(ep)
		}
	})
	return c.Conn.Close()
}
