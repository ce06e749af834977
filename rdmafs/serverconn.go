package rdmafs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// serverConn is one client connection: a reader goroutine that decodes
// requests and one goroutine per outstanding request (at most Credits).
type serverConn struct {
	s      *Server
	c      net.Conn
	log    *slog.Logger
	ctx    context.Context // cancelled when the connection is torn down
	cancel context.CancelFunc

	regions  RegionWriter  // nil on stream transports
	connBufs chan struct{} // pool buffers this connection may hold
	flags    uint32        // HELLO flags granted in WELCOME (wire.FlagFileID)

	wmu sync.Mutex // serializes frames (and the data after DATA frames)

	mu       sync.Mutex
	inflight map[uint32]struct{}
	draining bool
	welcomed bool // handshake done: GOODBYE may be sent
	handlers sync.WaitGroup
}

func newServerConn(s *Server, c net.Conn) *serverConn {
	ctx, cancel := context.WithCancel(context.Background())
	sc := &serverConn{
		s: s, c: c, ctx: ctx, cancel: cancel,
		log:      s.log.With("remote", c.RemoteAddr().String()),
		connBufs: make(chan struct{}, min(s.cfg.ConnBuffers, s.cfg.PoolBuffers)),
		inflight: map[uint32]struct{}{},
	}
	if rw, ok := c.(RegionWriter); ok {
		sc.regions = rw
	}
	return sc
}

// startDrain sends GOODBYE and wakes the reader so it stops taking requests.
// In-flight requests continue.
func (sc *serverConn) startDrain() {
	sc.mu.Lock()
	already := sc.draining
	sc.draining = true
	if !already {
		_ = sc.c.SetReadDeadline(time.Now())
	}
	welcomed := sc.welcomed
	sc.mu.Unlock()
	if already || !welcomed {
		// A connection still in its handshake just closes: GOODBYE in the
		// middle of a handshake would read as a protocol violation.
		return
	}
	go sc.send(wire.AppendFrame(nil, wire.TypeGoodbye, 0, wire.Goodbye{Reason: wire.CodeShuttingDown}.Append(nil)))
}

func (sc *serverConn) isDraining() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.draining
}

func (sc *serverConn) serve() {
	sc.s.metrics.connsActive.Add(1)
	defer sc.s.metrics.connsActive.Add(-1)
	sc.log.Debug("rdmafs connection open")
	err := sc.handshake()
	if err == nil {
		sc.mu.Lock()
		sc.welcomed = true
		drained := sc.draining
		sc.mu.Unlock()
		if drained {
			// Drain began during the handshake: say GOODBYE now.
			_ = sc.send(wire.AppendFrame(nil, wire.TypeGoodbye, 0, wire.Goodbye{Reason: wire.CodeShuttingDown}.Append(nil)))
		}
		err = sc.readLoop()
	}
	if sc.isDraining() && err == nil {
		sc.handlers.Wait() // in-flight reads finish; Server.drain bounds this
	}
	sc.cancel()
	sc.c.Close()
	sc.handlers.Wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		sc.log.Info("rdmafs connection closed", "err", err)
	} else {
		sc.log.Debug("rdmafs connection closed")
	}
}

// fail sends a connection-level error and returns err for the caller to
// close with.
func (sc *serverConn) fail(id uint32, code wire.Code, err error) error {
	sc.sendError(id, code, err.Error())
	return err
}

// readLoop decodes requests until EOF, a protocol violation, idleness or
// drain.
func (sc *serverConn) readLoop() error {
	cfg := &sc.s.cfg
	payload := make([]byte, wire.MaxPayload)
	var hb [wire.HeaderSize]byte
	// Buffered, so that a request's header and payload usually come in
	// one read(2), and raw on TCP (newStreamReader): a plain read is a
	// system call the Go scheduler sees (serverfile_linux.go says why
	// that costs).
	r := bufio.NewReaderSize(newStreamReader(sc.c), 4096)
	for {
		if !sc.setReadDeadline(cfg.IdleTimeout) {
			return nil
		}
		n, err := io.ReadFull(r, hb[:])
		if err != nil {
			if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				if sc.isDraining() {
					return nil
				}
				if sc.outstanding() > 0 {
					continue // a long read is still being served: not idle
				}
				return fmt.Errorf("idle for %v; closing", cfg.IdleTimeout)
			}
			if sc.isDraining() {
				return nil
			}
			return err
		}
		h, err := wire.ParseHeader(hb[:], wire.MaxPayload)
		if err != nil {
			code := wire.CodeProtocol
			if errors.Is(err, wire.ErrTooLarge) {
				code = wire.CodeTooLarge
			}
			return sc.fail(h.ID, code, err)
		}
		if !sc.setReadDeadline(cfg.ReadTimeout) {
			return nil
		}
		p := payload[:h.Length]
		if _, err := io.ReadFull(r, p); err != nil {
			if sc.isDraining() {
				return nil
			}
			return fmt.Errorf("read %s payload: %w", h.Type, err)
		}
		if err := sc.dispatch(h, p); err != nil {
			return err
		}
	}
}

// setReadDeadline arms the read deadline unless the connection is draining;
// under mu so that it cannot undo startDrain's wake-up.
func (sc *serverConn) setReadDeadline(d time.Duration) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.draining {
		return false
	}
	_ = sc.c.SetReadDeadline(time.Now().Add(d))
	return true
}

func (sc *serverConn) outstanding() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.inflight)
}

// dispatch validates a request frame, takes a credit and starts its handler.
// It returns an error only for violations that close the connection.
func (sc *serverConn) dispatch(h wire.Header, p []byte) error {
	var run func()
	switch h.Type {
	case wire.TypeStat:
		m, err := wire.DecodeStat(p)
		if err != nil {
			return sc.fail(h.ID, wire.CodeProtocol, err)
		}
		run = func() { sc.handleStat(h.ID, m) }
	case wire.TypeList:
		m, err := wire.DecodeList(p)
		if err != nil {
			return sc.fail(h.ID, wire.CodeProtocol, err)
		}
		run = func() { sc.handleList(h.ID, m) }
	case wire.TypeRead:
		m, err := wire.DecodeRead(p)
		if err != nil {
			return sc.fail(h.ID, wire.CodeProtocol, err)
		}
		run = func() { sc.handleRead(h.ID, m) }
	default:
		return sc.fail(h.ID, wire.CodeProtocol, fmt.Errorf("unexpected %s frame after handshake", h.Type))
	}
	if h.ID == 0 {
		return sc.fail(0, wire.CodeProtocol, errors.New("request id 0 is reserved"))
	}
	sc.mu.Lock()
	if _, dup := sc.inflight[h.ID]; dup {
		sc.mu.Unlock()
		return sc.fail(h.ID, wire.CodeProtocol, fmt.Errorf("request id %d already outstanding", h.ID))
	}
	if len(sc.inflight) >= sc.s.cfg.Credits {
		sc.mu.Unlock()
		return sc.fail(h.ID, wire.CodeCredits, fmt.Errorf("more than %d outstanding requests (the credits announced in WELCOME)", sc.s.cfg.Credits))
	}
	sc.inflight[h.ID] = struct{}{}
	sc.handlers.Add(1)
	sc.mu.Unlock()
	go func() {
		defer func() {
			sc.mu.Lock()
			delete(sc.inflight, h.ID)
			sc.mu.Unlock()
			sc.handlers.Done()
		}()
		run()
	}()
	return nil
}

// send writes one or more buffers as a unit under the write deadline. A
// failed write tears the connection down: a client that stops reading is
// cut off after WriteTimeout instead of holding the server.
func (sc *serverConn) send(bufs ...[]byte) error {
	if err := sc.lockForWrite(); err != nil {
		return err
	}
	defer sc.wmu.Unlock()
	if err := writeBuffers(sc.c, bufs); err != nil {
		return sc.writeFailed(fmt.Errorf("write to client: %w", err))
	}
	return nil
}

// lockForWrite takes wmu for the writes of one frame and sets their
// deadline, or fails when the connection is closing; the caller unlocks.
func (sc *serverConn) lockForWrite() error {
	sc.wmu.Lock()
	if err := sc.ctx.Err(); err != nil {
		sc.wmu.Unlock()
		return fmt.Errorf("connection closing: %w", err)
	}
	_ = sc.c.SetWriteDeadline(time.Now().Add(sc.s.cfg.WriteTimeout))
	return nil
}

// writeFailed tears the connection down after a failed or partial write
// (the stream can no longer be framed) and returns err.
func (sc *serverConn) writeFailed(err error) error {
	sc.cancel()
	sc.c.Close()
	return err
}

func (sc *serverConn) sendError(id uint32, code wire.Code, msg string) {
	sc.s.metrics.errorSent(code)
	_ = sc.send(errorFrame(id, code, msg))
}

func (sc *serverConn) sendMsg(t wire.Type, id uint32, payload []byte) error {
	var hb [wire.HeaderSize]byte
	wire.PutHeader(hb[:], wire.Header{Type: t, ID: id, Length: uint32(len(payload))})
	return sc.send(hb[:], payload)
}
