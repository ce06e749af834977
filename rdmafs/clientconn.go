package rdmafs

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// clientConn is one authenticated connection. A reader goroutine routes
// replies to their calls by request id; on a stream transport it reads data
// straight into the call's destination buffer.
type clientConn struct {
	c       net.Conn
	r       io.Reader // reads c
	welcome wire.Welcome
	credits chan struct{}
	regions RegionRegistrar // nil on stream transports
	timeout time.Duration

	wmu sync.Mutex

	mu      sync.Mutex
	pending map[uint32]*call
	nextID  uint32
	err     error // why the connection died; nil while alive
	goodbye bool  // server is draining: send nothing new
	dead    chan struct{}
}

// call is one outstanding request.
type call struct {
	buf     []byte // stream destination for DATA; nil for stat/list/region reads
	got     uint32
	sum     bool // keep crc: the CRC32C of the DATA bytes, in order
	crc     uint32
	done    chan struct{}
	typ     wire.Type
	payload []byte
	err     error
}

func (cc *clientConn) usable() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err == nil && !cc.goodbye
}

// kill tears the connection down; every pending call fails with err. It
// returns once the reader has exited, so no data lands in a caller's buffer
// afterwards.
func (cc *clientConn) kill(err error) {
	cc.die(err)
	<-cc.dead
}

func (cc *clientConn) die(err error) {
	cc.mu.Lock()
	if cc.err == nil {
		cc.err = err
	}
	cc.mu.Unlock()
	cc.c.Close()
}

// readLoop is the reader goroutine.
func (cc *clientConn) readLoop() {
	buf := make([]byte, wire.MaxPayload)
	err := cc.readFrames(buf)
	cc.mu.Lock()
	if cc.err == nil {
		cc.err = err
	}
	err = cc.err
	pending := cc.pending
	cc.pending = nil
	cc.mu.Unlock()
	cc.c.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
	close(cc.dead)
}

func (cc *clientConn) lookup(id uint32, remove bool) *call {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cl := cc.pending[id]
	if remove {
		delete(cc.pending, id)
	}
	return cl
}

func (cc *clientConn) readFrames(buf []byte) error {
	for {
		h, p, err := wire.ReadFrame(cc.r, buf, wire.MaxPayload)
		if err != nil {
			if isPeerMismatch(err) {
				return fmt.Errorf("%w: %v", ErrProtocol, err)
			}
			return fmt.Errorf("%w: connection lost: %v", ErrServerGone, err)
		}
		switch h.Type {
		case wire.TypeData:
			if err := cc.readData(h.ID, p); err != nil {
				return err
			}
		case wire.TypeGoodbye:
			cc.mu.Lock()
			cc.goodbye = true
			cc.mu.Unlock()
		case wire.TypeError, wire.TypeStatOK, wire.TypeListOK, wire.TypeReadDone:
			if h.ID == 0 && h.Type == wire.TypeError {
				return connErr("connection", p)
			}
			cl := cc.lookup(h.ID, true)
			if cl == nil {
				return fmt.Errorf("%w: %s for unknown request id %d", ErrProtocol, h.Type, h.ID)
			}
			cl.typ, cl.payload = h.Type, append([]byte(nil), p...)
			close(cl.done)
		default:
			return fmt.Errorf("%w: unexpected %s frame from server", ErrProtocol, h.Type)
		}
	}
}

// connCodeErr maps a connection-level ERROR: anything but auth and protocol
// errors means "come back later".
func connCodeErr(c wire.Code) error {
	switch c {
	case wire.CodeAuth:
		return ErrAuth
	case wire.CodeShuttingDown, wire.CodeBusy:
		return ErrServerGone
	default:
		return ErrProtocol
	}
}

// readData moves the bytes announced by a DATA frame into the call's
// buffer, with no intermediate copy.
func (cc *clientConn) readData(id uint32, p []byte) error {
	d, err := wire.DecodeData(p)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	cl := cc.lookup(id, false)
	if cl == nil || cl.buf == nil {
		return fmt.Errorf("%w: DATA for request id %d that expects none", ErrProtocol, id)
	}
	if d.Offset != cl.got || uint64(d.Offset)+uint64(d.N) > uint64(len(cl.buf)) {
		return fmt.Errorf("%w: DATA [%d, +%d) for request %d outside its %d-byte buffer or out of order (expected offset %d)",
			ErrProtocol, d.Offset, d.N, id, len(cl.buf), cl.got)
	}
	dst := cl.buf[d.Offset : d.Offset+d.N]
	if !cl.sum {
		if _, err := io.ReadFull(cc.r, dst); err != nil {
			return fmt.Errorf("%w: connection lost in data: %v", ErrServerGone, err)
		}
		cl.got += d.N
		return nil
	}
	// The CRC32C is taken segment by segment as the bytes arrive, while
	// they are still in the CPU's cache: a pass over the whole chunk
	// afterwards would read it back from memory.
	for len(dst) > 0 {
		seg := dst[:min(len(dst), crcSegment)]
		if _, err := io.ReadFull(cc.r, seg); err != nil {
			return fmt.Errorf("%w: connection lost in data: %v", ErrServerGone, err)
		}
		cl.crc = crc32c(cl.crc, seg)
		cl.got += uint32(len(seg))
		dst = dst[len(seg):]
	}
	return nil
}

// crcSegment is how many bytes the reader receives before it adds them to
// a read's CRC32C: small enough to still be in the L2 cache, large enough
// that each raw read(2) drains what the socket holds. 512 KiB made loads
// over loopback faster than 128 KiB, with less client CPU
// (docs/PERFORMANCE-NOTES.md, rdmafs; docs/PROTOCOL.md, Throughput over
// TCP).
const crcSegment = 512 << 10

// roundTrip sends one request and waits for its reply. If ctx ends first the
// connection is killed (and roundTrip waits for the reader to stop) so that
// a late reply can never write into buf after roundTrip returns.
func (cc *clientConn) roundTrip(ctx context.Context, t wire.Type, payload []byte, buf []byte) (*call, error) {
	return cc.do(ctx, t, payload, &call{buf: buf})
}

// do sends one request for cl, whose buf and sum are set, and waits for
// its reply, as roundTrip.
func (cc *clientConn) do(ctx context.Context, t wire.Type, payload []byte, cl *call) (*call, error) {
	cl.done = make(chan struct{})
	select {
	case cc.credits <- struct{}{}:
	case <-cc.dead:
		return nil, cc.deadErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-cc.credits }()
	cc.mu.Lock()
	if cc.err != nil || cc.goodbye {
		cc.mu.Unlock()
		return nil, cc.deadErr()
	}
	cc.nextID++
	if cc.nextID == 0 {
		cc.nextID = 1
	}
	id := cc.nextID
	cc.pending[id] = cl
	cc.mu.Unlock()

	frame := wire.AppendFrame(make([]byte, 0, wire.HeaderSize+len(payload)), t, id, payload)
	cc.wmu.Lock()
	_ = cc.c.SetWriteDeadline(time.Now().Add(cc.timeout))
	_, err := cc.c.Write(frame)
	cc.wmu.Unlock()
	if err != nil {
		cc.kill(fmt.Errorf("%w: send %s: %v", ErrServerGone, t, err))
		return cl.wait()
	}
	timer := time.NewTimer(cc.timeout)
	defer timer.Stop()
	select {
	case <-cl.done:
		return cl, cl.err
	case <-timer.C:
		cc.kill(fmt.Errorf("%w: no reply to %s within %v; dropped the connection", ErrServerGone, t, cc.timeout))
	case <-ctx.Done():
		cc.kill(fmt.Errorf("%w: request cancelled: %v", ErrServerGone, ctx.Err()))
		<-cl.done
		return nil, ctx.Err()
	}
	return cl.wait()
}

// wait waits for cl to end after its connection was killed. The reply may
// have come just before the kill (the timer and the reply raced): then cl
// is whole and returned, not a nil call with a nil error.
func (cl *call) wait() (*call, error) {
	<-cl.done
	if cl.err != nil {
		return nil, cl.err
	}
	return cl, nil
}

func (cc *clientConn) deadErr() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return cc.err
	}
	return fmt.Errorf("%w: server is draining (GOODBYE)", ErrServerGone)
}
