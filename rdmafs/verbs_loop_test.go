package rdmafs

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Helpers for the verbs transport's tests over the loopback fabric.

// listenSpy is a loopback transport that keeps the listener it made, and listens on
// addr when set.
type listenSpy struct {
	*loopback
	ln   *verbsListener
	addr string
}

func (s *listenSpy) Listen(ctx context.Context, addr string) (net.Listener, error) {
	if s.addr != "" {
		addr = s.addr
	}
	ln, err := s.loopback.Listen(ctx, addr)
	if err == nil {
		s.ln = ln.(*verbsListener)
	}
	return ln, err
}

// loopEnv is a server on a fresh loopback fabric, with its listener.
type loopEnv struct {
	tr  *listenSpy
	fab *simFabric
	ts  *testServer
	ln  *verbsListener
}

// newLoopEnv starts a server over a new loopback fabric; tune adjusts the
// transport's options first.
func newLoopEnv(t *testing.T, cfg serverConfig, tune func(*verbsOptions)) *loopEnv {
	t.Helper()
	return newLoopEnvOn(t, "", cfg, tune)
}

// newLoopEnvOn is newLoopEnv listening on addr ("": 127.0.0.1:0).
func newLoopEnvOn(t *testing.T, addr string, cfg serverConfig, tune func(*verbsOptions)) *loopEnv {
	t.Helper()
	lb := newLoopback()
	if tune != nil {
		tune(&lb.v.opts)
	}
	spy := &listenSpy{loopback: lb, addr: addr}
	ts := startServer(t, cfg, spy)
	env := &loopEnv{tr: spy, fab: lb.fab, ts: ts, ln: spy.ln}
	waitFor(t, "the server's buffers registered", func() bool {
		env.ln.mu.Lock()
		defer env.ln.mu.Unlock()
		return len(env.ln.devs) > 0
	})
	return env
}

// endpoints returns the server's queue pairs.
func (e *loopEnv) endpoints() []*serverEndpoint {
	e.ln.mu.Lock()
	defer e.ln.mu.Unlock()
	var out []*serverEndpoint
	for _, ep := range e.ln.eps {
		out = append(out, ep)
	}
	return out
}

// serverDevice returns the server's state for the fabric's device.
func (e *loopEnv) serverDevice(t *testing.T) *serverDevice {
	t.Helper()
	e.ln.mu.Lock()
	defer e.ln.mu.Unlock()
	require.Len(t, e.ln.devs, 1, "server has state for %d devices, want 1", len(e.ln.devs))
	for _, sd := range e.ln.devs {
		return sd
	}
	return nil
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		require.False(t, time.Now().After(deadline), "timed out waiting for %s", what)
		time.Sleep(time.Millisecond)
	}
}

// simQPOf is the modelled queue pair of an endpoint.
func simQPOf(ep *qpEndpoint) *simQP { return ep.qp.(*simQP) }

// sendQueueLen is how many work requests are in flight on qp.
func (f *simFabric) sendQueueLen(qp *simQP) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(qp.sq)
}

func (f *simFabric) tapped(qp *simQP) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), qp.tapped...)
}

// rawQueuePair connects a queue pair to the server's RDMA port with priv
// as private data, as any host on the fabric could, and returns the event
// that ended the attempt.
func rawQueuePair(t *testing.T, st rdmaStack, serverAddr string, priv []byte) cmEvent {
	t.Helper()
	ap := netip.MustParseAddrPort(serverAddr)
	dst, err := rdmaAddr(ap)
	require.NoError(t, err)
	ch, err := st.newEventChannel()
	require.NoError(t, err)
	defer ch.destroy()
	id, err := ch.createID()
	require.NoError(t, err)
	defer id.destroy()
	require.NoError(t, id.resolveAddr(netip.AddrPortFrom(dst.Addr(), 0), dst, time.Second))
	ev, _ := ch.next()
	require.Equal(t, evAddrResolved, ev.kind, "resolve: %s", ev.kind)
	_ = id.resolveRoute(time.Second)
	ev, _ = ch.next()
	require.Equal(t, evRouteResolved, ev.kind, "route: %s", ev.kind)
	dev := id.device()
	pd, _ := dev.allocPD()
	cq, _ := dev.createCQ(4)
	_, err = id.createQP(pd, cq, 2, 2)
	require.NoError(t, err)
	defer func() {
		id.destroyQP()
		cq.destroy()
		pd.dealloc()
	}()
	require.NoError(t, id.connect(priv, connParams{}))
	ev, err = ch.next()
	require.NoError(t, err)
	if ev.kind == evEstablished {
		_ = id.disconnect()
	}
	return ev
}
