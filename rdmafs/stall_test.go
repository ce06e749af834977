package rdmafs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stallProxy forwards TCP connections to target. While stalling, the
// connections it already carries stop forwarding (bytes are held, nothing is
// closed), as a hung server or a black-holed path would behave.
type stallProxy struct {
	ln     net.Listener
	target string
	stall  atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *stallProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		stalled := p.stall.Load() // connections made while stalling work
		go p.pipe(c, s, stalled)
		go p.pipe(s, c, stalled)
	}
}

func (p *stallProxy) pipe(dst, src net.Conn, immune bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for !immune && p.stall.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// TestStalledConnectionTimesOutAndRetries: when the path stalls mid-read,
// the request times out and its connection is dropped; with retries the
// read completes on a fresh connection, without them it fails promptly with
// ErrServerGone.
func TestStalledConnectionTimesOutAndRetries(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	data := writeFile(t, ts.root, "f", 8<<20, 3)
	for _, retry := range []time.Duration{5 * time.Second, 0} {
		px := newStallProxy(t, ts.addr)
		cl, err := Dial(context.Background(), px.ln.Addr().String(), WithToken(testTok), WithLogger(quietLogger()),
			WithConnections(1), WithTimeout(300*time.Millisecond), WithRetryDeadline(retry))
		require.NoError(t, err)
		defer cl.Close()
		f, err := cl.Open(context.Background(), "f")
		require.NoError(t, err)
		px.stall.Store(true) // the open connection hangs; new ones work
		buf := make([]byte, len(data))
		start := time.Now()
		_, err = f.ReadAt(buf, 0)
		if retry > 0 {
			require.NoError(t, err, "read across a stalled connection")
			require.True(t, bytes.Equal(buf, data), "read across a stalled connection: bytes differ")
		} else {
			require.ErrorIs(t, err, ErrServerGone, "without retries")
			require.LessOrEqual(t, time.Since(start), 3*time.Second, "stalled read failed after %v; the request timeout is 300ms", time.Since(start))
		}
		px.stall.Store(false)
	}
}

// TestConnectionLimit: past MaxConns the server answers BUSY and closes.
func TestConnectionLimit(t *testing.T) {
	ts := startServer(t, serverConfig{MaxConns: 1}, nil)
	first := rawDial(t, ts.addr)
	first.mustWelcome(testTok)
	second := rawDial(t, ts.addr)
	_ = second.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 256)
	h, p, err := wire.ReadFrame(second.c, buf, uint32(len(buf)))
	require.NoError(t, err)
	m, _ := wire.DecodeError(p)
	require.EqualValues(t, wire.TypeError, h.Type, "got %s %s, want ERROR BUSY", h.Type, m.Code)
	require.EqualValues(t, wire.CodeBusy, m.Code, "got %s %s, want ERROR BUSY", h.Type, m.Code)
	_, err = second.c.Read(buf)
	require.Equal(t, io.EOF, err, "connection not closed after BUSY: %v", err)
}

// A call whose reply came just before its connection was killed (its
// timer fired, or its send failed, as the reply arrived) is returned
// whole; one failed by the kill gives its error. Never a nil call with a
// nil error, which crashed a read.
func TestCallWaitAfterKill(t *testing.T) {
	gone := fmt.Errorf("%w: killed", ErrServerGone)
	for _, tc := range []struct {
		err     error
		wantNil bool
	}{{nil, false}, {gone, true}} {
		cl := &call{done: make(chan struct{}), typ: wire.TypeReadDone, err: tc.err}
		close(cl.done)
		got, err := cl.wait()
		assert.ErrorIs(t, err, tc.err, "wait on a call ended with %v = (%v, %v), want nil call %v", tc.err, got, err, tc.wantNil)
		assert.Equal(t, tc.wantNil, (got == nil), "wait on a call ended with %v = (%v, %v), want nil call %v", tc.err, got, err, tc.wantNil)
	}
}
