package rdmafs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each test here pins down one defect of the first verbs transport, over
// the loopback fabric (which models the hardware behaviour that exposed
// it), and fails if the fix is undone.

// Completion ordering: when READ_DONE reaches the client, the data it
// completes is in the client's memory. The fabric places WRITE data only
// when a later message on the same queue pair arrives, so a READ_DONE on
// any other channel (the TCP stream, as before) arrives to an empty
// buffer.
func TestVerbsReadDoneFollowsTheData(t *testing.T) {
	env := newLoopEnv(t, serverConfig{BufferSize: 64 << 10}, nil)
	data := writeFile(t, env.ts.root, "f", 300<<10, 9)
	r, cc := loopRaw(t, env.tr.loopback, env.ts.addr)
	dst := make([]byte, len(data))
	rg, err := cc.Register(dst)
	require.NoError(t, err)
	r.send(wire.TypeRead, 1, wire.Read{Length: uint32(len(data)), Flags: wire.ReadRegion, Region: rg, Name: "f"}.Append(nil))
	h, p, err := r.recv()
	require.NoError(t, err, "got %s, %v; want READ_DONE", h.Type, err)
	require.EqualValues(t, wire.TypeReadDone, h.Type, "got %s, %v; want READ_DONE", h.Type, err)
	// Still registered: nothing has forced the writes out but READ_DONE.
	d, _ := wire.DecodeReadDone(p)
	require.Equal(t, uint32(len(data)), d.N, "at READ_DONE the destination holds %d of %d bytes right", prefixEqual(dst, data), len(data))
	require.True(t, bytes.Equal(dst, data), "at READ_DONE the destination holds %d of %d bytes right", prefixEqual(dst, data), len(data))
	// And through the client, with its CRC checked before it deregisters.
	cl := dialTest(t, env.ts, env.tr, WithCRC(true), WithChunkSize(128<<10))
	f, err := cl.Open(context.Background(), "f")
	require.NoError(t, err)
	got := make([]byte, len(data))
	n, err := f.ReadAt(got, 0)
	require.Len(t, data, n, "ReadAt = %d, %v (equal %v)", n, err, bytes.Equal(got, data))
	require.NoError(t, err, "ReadAt = %d, %v (equal %v)", n, err, bytes.Equal(got, data))
	require.True(t, bytes.Equal(got, data), "ReadAt = %d, %v (equal %v)", n, err, bytes.Equal(got, data))
}

func prefixEqual(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// The server's buffers are registered for local access only and its queue
// pairs grant no RDMA READ: a client that holds the token and knows a
// buffer's key and address (keys are guessable: they count up) can neither
// write nor read server memory.
func TestVerbsServerMemoryNotRemotelyAccessible(t *testing.T) {
	env := newLoopEnv(t, serverConfig{PoolBuffers: 4}, nil)
	writeFile(t, env.ts.root, "f", 1<<20, 1)
	cl := dialTest(t, env.ts, env.tr, WithConnections(1))
	f, err := cl.Open(context.Background(), "f")
	require.NoError(t, err)
	_, err = f.ReadAt(make([]byte, 1<<20), 0)
	require.NoError(t, err)
	for _, a := range env.fab.statsNow().accepted {
		assert.Zero(t, a.responderResources, "server accepted a queue pair with responder resources %d, initiator depth %d; want 0, 0", a.responderResources, a.initiatorDepth)
		assert.Zero(t, a.initiatorDepth, "server accepted a queue pair with responder resources %d, initiator depth %d; want 0, 0", a.responderResources, a.initiatorDepth)
	}
	sd := env.serverDevice(t)
	type target struct {
		addr uint64
		key  uint32
		mem  []byte
	}
	var targets []target
	env.fab.mu.Lock()
	for _, m := range sd.pd.(*simPD).mrs {
		assert.EqualValues(t, 0, m.access&(accessRemoteWrite|accessRemoteRead), "server region at 0x%x registered with remote access 0x%x", m.base, m.access)
		targets = append(targets, target{m.base, m.key, m.mem})
	}
	env.fab.mu.Unlock()
	require.GreaterOrEqual(t, len(targets), 4, "%d server registrations, want the 4 pool buffers and the frame buffers", len(targets))
	for i, tg := range targets {
		for _, op := range []wrOp{wrWrite, wrRead} {
			t.Run(fmt.Sprintf("region%d/op%d", i, op), func(t *testing.T) {
				before := append([]byte(nil), tg.mem[:4096]...)
				_, vc := loopRaw(t, env.tr.loopback, env.ts.addr)
				own := bytes.Repeat([]byte{0xee}, 4096)
				rg, err := vc.Register(own)
				require.NoError(t, err)
				if d := int64(rg.Key>>8) - int64(tg.key>>8); d < -64 || d > 64 {
					t.Logf("server key 0x%x is %d registrations from the client's own 0x%x", tg.key, d, rg.Key)
				}
				ep := vc.endpoint()
				err = ep.run(workRequest{op: op, addr: rg.Addr, n: 4096, lkey: rg.Key, raddr: tg.addr, rkey: tg.key},
					time.Now().Add(5*time.Second), "attack")
				require.Error(t, err, "RDMA op %d on server memory 0x%x with its key succeeded", op, tg.addr)
				env.fab.mu.Lock()
				changed := !bytes.Equal(before, tg.mem[:4096])
				env.fab.mu.Unlock()
				require.False(t, changed, "server memory changed")
			})
		}
	}
	// The server still serves.
	_, err = f.ReadAt(make([]byte, 4096), 0)
	require.NoError(t, err)
}

// A WRITE that times out is flushed, by moving the queue pair to the
// error state and waiting for the flush (or, when even that does not come,
// destroying the queue pair), before its buffer returns to the pool: when
// the stuck link recovers, nothing of what the buffer held since (another
// client's file) goes out on it. The fabric lets A's link recover at the
// worst moment: when B's WRITE from the reused buffer is posted.
func TestVerbsTimedOutWriteFlushedBeforeReuse(t *testing.T) {
	env := newLoopEnv(t, serverConfig{PoolBuffers: 1, BufferSize: 64 << 10}, func(o *verbsOptions) {
		o.writeTimeout = 200 * time.Millisecond
		o.flushTimeout = 200 * time.Millisecond
	})
	env.fab.tap = true
	a := bytes.Repeat([]byte{0xaa}, 64<<10)
	b := bytes.Repeat([]byte{0xbb}, 64<<10)
	os.WriteFile(filepath.Join(env.ts.root, "a"), a, 0o644)
	os.WriteFile(filepath.Join(env.ts.root, "b"), b, 0o644)

	clA := dialTest(t, env.ts, env.tr, WithConnections(1), WithRetryDeadline(0))
	epA := env.endpoints()[0]
	clB := dialTest(t, env.ts, env.tr, WithConnections(1))
	var epB *serverEndpoint
	for _, ep := range env.endpoints() {
		if ep != epA {
			epB = ep
		}
	}
	qpA, qpB := simQPOf(epA.qpEndpoint), simQPOf(epB.qpEndpoint)
	fa, err := clA.Open(context.Background(), "a")
	require.NoError(t, err)
	fb, err := clB.Open(context.Background(), "b")
	require.NoError(t, err)
	env.fab.stall(qpA, true)
	env.fab.mu.Lock()
	env.fab.unstallOnPost = [2]*simQP{qpB, qpA}
	env.fab.mu.Unlock()
	errA := make(chan error, 1)
	go func() {
		_, err := fa.ReadAt(make([]byte, len(a)), 0)
		errA <- err
	}()
	waitFor(t, "A's WRITE in flight", func() bool { return env.fab.sendQueueLen(qpA) > 0 })
	gotB := make([]byte, len(b))
	_, err = fb.ReadAt(gotB, 0)
	require.NoError(t, err, "B's read: %v", err)
	require.True(t, bytes.Equal(gotB, b), "B's read: %v", err)
	err = <-errA
	require.Error(t, err, "A's read succeeded over a stuck link")
	leaked := bytes.Count(env.fab.tapped(qpA), bytes.Repeat([]byte{0xbb}, 64))
	require.LessOrEqual(t, leaked, 0, "%d runs of 64 bytes of B's file went out on A's queue pair", leaked)
}

// Closing the listener (Serve does, before draining) leaves the rdma_cm
// event channel alone while connections use it: it goes with the last
// one, and everything is freed in the order verbs demands.
func TestVerbsListenerCloseBeforeConnectionsDrain(t *testing.T) {
	env := newLoopEnv(t, serverConfig{}, nil)
	data := writeFile(t, env.ts.root, "f", 2<<20, 4)
	var cls []*Client
	for range 3 {
		cls = append(cls, dialTest(t, env.ts, env.tr, WithConnections(2), WithRetryDeadline(0)))
	}
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Go(func() {
			f, err := cl.Open(context.Background(), "f")
			if err != nil {
				return
			}
			buf := make([]byte, len(data))
			n, err := f.ReadAt(buf, 0)
			assert.False(t, err == nil && (n != len(data) || !bytes.Equal(buf, data)), "read during drain returned wrong data")
		})
	}
	env.ts.stop(t)
	wg.Wait()
	for _, cl := range cls {
		cl.Close()
	}
	waitFor(t, "every queue pair, region and domain freed", func() bool {
		s := env.fab.statsNow()
		return s.qps == 0 && s.mrs == 0 && s.pds == 0 && s.cqs == 0
	})
	select {
	case <-env.ln.loopDone:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "event loop still running after the last connection closed")
	}
	v := env.fab.Violations()
	require.Empty(t, v, "verbs misuse:\n%s", strings.Join(v, "\n"))
}

// Queue pairs are paired with an authenticated session only: the rdma_cm
// private data must carry the session's HMAC tag; anything else is
// rejected before the server allocates anything for it, a session pairs
// once, and nothing pairs before WELCOME.
func TestVerbsQueuePairPairingIsAuthenticated(t *testing.T) {
	env := newLoopEnv(t, serverConfig{}, nil)
	writeFile(t, env.ts.root, "f", 4096, 2)
	before := env.fab.statsNow()

	// Authenticate on TCP, then try to pair with the wrong proofs.
	c, err := env.tr.Dial(context.Background(), env.ts.addr)
	require.NoError(t, err)
	defer c.Close()
	r := &raw{t: t, c: c}
	r.mustWelcome(testTok)
	good := newPairingSession(testTok, &r.nonces[0], &r.nonces[1])
	wrongToken := newPairingSession([]byte("another-token-0123456789"), &r.nonces[0], &r.nonces[1])
	otherNonce := r.nonces[1]
	otherNonce[31] ^= 1
	wrongNonce := newPairingSession(testTok, &r.nonces[0], &otherNonce)
	cookie := []byte(c.LocalAddr().String() + "\x00") // the old pairing: the TCP peer's address
	for _, tc := range []struct {
		name string
		priv []byte
	}{
		{"none", nil},
		{"TCP address cookie", cookie},
		{"tag under another token", wrongToken.encode()},
		{"session of another nonce", wrongNonce.encode()},
		{"trailing garbage", append(good.encode(), 1)},
		{"truncated", good.encode()[:pairSize-1]},
	} {
		ev := rawQueuePair(t, env.fab, env.ts.addr, tc.priv)
		reason, _ := parseReject(ev.priv)
		assert.Equal(t, evRejected, ev.kind, "%s: %s (reason %d), want REJECTED for authentication", tc.name, ev.kind, reason)
		assert.Equal(t, rejectAuth, reason, "%s: %s (reason %d), want REJECTED for authentication", tc.name, ev.kind, reason)
	}
	// Each attempt made one domain, completion queue and queue pair: its
	// own. The server made none.
	after := env.fab.statsNow()
	d := after.pdAllocs - before.pdAllocs
	assert.Equal(t, 6, d, "6 rejected attempts made %d domains, %d completion queues, %d queue pairs; want 6 each, all the attempts' own", d, after.cqCreates-before.cqCreates, after.qpCreates-before.qpCreates)
	assert.Equal(t, 6, after.cqCreates-before.cqCreates, "6 rejected attempts made %d domains, %d completion queues, %d queue pairs; want 6 each, all the attempts' own", d, after.cqCreates-before.cqCreates, after.qpCreates-before.qpCreates)
	assert.Equal(t, 6, after.qpCreates-before.qpCreates, "6 rejected attempts made %d domains, %d completion queues, %d queue pairs; want 6 each, all the attempts' own", d, after.cqCreates-before.cqCreates, after.qpCreates-before.qpCreates)
	// The real session still pairs (with zero padding, as over
	// InfiniBand), once.
	padded := append(good.encode(), make([]byte, 56-pairSize)...)
	ev := rawQueuePair(t, env.fab, env.ts.addr, padded)
	require.Equal(t, evEstablished, ev.kind, "the session's own tag: %s, want ESTABLISHED", ev.kind)
	ev = rawQueuePair(t, env.fab, env.ts.addr, good.encode())
	require.Equal(t, evRejected, ev.kind, "replayed pairing: %s, want REJECTED", ev.kind)

	// Before WELCOME there is no session to pair with.
	c2, err := env.tr.Dial(context.Background(), env.ts.addr)
	require.NoError(t, err)
	defer c2.Close()
	r2 := &raw{t: t, c: c2}
	hello := wire.Hello{Nonce: newNonce()}
	r2.send(wire.TypeHello, 0, hello.Append(nil))
	h, p, err := r2.recv()
	require.NoError(t, err, "CHALLENGE: %s %v", h.Type, err)
	require.EqualValues(t, wire.TypeChallenge, h.Type, "CHALLENGE: %s %v", h.Type, err)
	ch, _ := wire.DecodeChallenge(p)
	early := newPairingSession(testTok, &hello.Nonce, &ch.Nonce)
	ev = rawQueuePair(t, env.fab, env.ts.addr, early.encode())
	require.Equal(t, evRejected, ev.kind, "queue pair before AUTH and WELCOME: %s, want REJECTED", ev.kind)
}

// Sessions waiting for their queue pair are capped and expire, and a
// flood of unauthenticated connect requests leaves nothing behind.
func TestVerbsPendingSessionsCappedAndExpire(t *testing.T) {
	env := newLoopEnv(t, serverConfig{}, func(o *verbsOptions) {
		o.maxPending = 3
		o.pairTimeout = 300 * time.Millisecond
	})
	var raws []*raw
	for range 3 {
		c, err := env.tr.Dial(context.Background(), env.ts.addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		r := &raw{t: t, c: c}
		r.mustWelcome(testTok) // and never connect the queue pair
		raws = append(raws, r)
	}
	c, err := env.tr.Dial(context.Background(), env.ts.addr)
	require.NoError(t, err)
	defer c.Close()
	r := &raw{t: t, c: c}
	h, p := r.handshake(testTok)
	require.Equal(t, wire.TypeError, h.Type, "a 4th waiting session: %s, want ERROR BUSY", h.Type)
	m, _ := wire.DecodeError(p)
	require.Equal(t, wire.CodeBusy, m.Code, "a 4th waiting session: %s %q, want BUSY", m.Code, m.Message)
	for range 200 {
		priv := make([]byte, pairSize)
		copy(priv, pairMagic)
		copy(priv[4:], newNonceSlice())
		ev := rawQueuePair(t, env.fab, env.ts.addr, priv)
		require.Equal(t, evRejected, ev.kind, "random pairing data: %s", ev.kind)
	}
	// Past the pairing timeout the sessions are gone and their
	// connections closed.
	for _, r := range raws {
		r.expectClosed()
	}
	waitFor(t, "sessions expired", func() bool {
		env.ln.mu.Lock()
		defer env.ln.mu.Unlock()
		return len(env.ln.sessions) == 0
	})
	cl := dialTest(t, env.ts, env.tr, WithConnections(3))
	_, err = cl.Stat(context.Background(), ".")
	require.NoError(t, err, "a client after the flood")
}

func newNonceSlice() []byte { n := newNonce(); return n[:] }

// One protection domain per device and one registration of the pool,
// however many connections; a locked-memory limit too low for the pool
// fails Serve at once with an error naming ulimit -l, and one too low for
// a client's buffer fails the read (not retried) saying the same.
func TestVerbsPoolRegisteredOnce(t *testing.T) {
	env := newLoopEnv(t, serverConfig{PoolBuffers: 8, BufferSize: 64 << 10}, nil)
	data := writeFile(t, env.ts.root, "f", 1<<20, 5)
	for range 3 {
		cl := dialTest(t, env.ts, env.tr, WithConnections(4), WithChunkSize(64<<10))
		f, _ := cl.Open(context.Background(), "f")
		got := make([]byte, len(data))
		_, err := f.ReadAt(got, 0)
		require.NoError(t, err, "read: %v", err)
		require.True(t, bytes.Equal(got, data), "read: %v", err)
	}
	// Every registration of a pool buffer, on any domain: one each.
	pool := map[uint64]bool{}
	for _, b := range env.ts.srv.pool.buffers() {
		pool[addrOf(b)] = true
	}
	st := env.fab.statsNow()
	poolRegs := 0
	for _, r := range st.registered {
		if pool[r.base] {
			poolRegs++
		}
	}
	assert.EqualValues(t, 8, poolRegs, "the 8 pool buffers were registered %d times for 12 connections, want 8", poolRegs)
	// 12 client connections have a domain each; the server one in all.
	assert.EqualValues(t, 12+1, st.pdAllocs, "%d protection domains allocated, want 12 for the client connections and 1 for the server", st.pdAllocs)

	t.Run("server memlock", func(t *testing.T) {
		lb := newLoopback()
		lb.fab.memlock = 256 << 10 // the pool needs 512 KiB
		srv, err := newServer(serverConfig{Root: t.TempDir(), Token: testTok, PoolBuffers: 8, BufferSize: 64 << 10, Logger: quietLogger()})
		require.NoError(t, err)
		ln, err := lb.Listen(context.Background(), "127.0.0.1:0")
		require.NoError(t, err)
		start := time.Now()
		err = srv.Serve(context.Background(), ln)
		require.Error(t, err, "Serve = %v, want an ENOMEM error naming ulimit -l", err)
		require.ErrorContains(t, err, "ulimit -l", "Serve = %v, want an ENOMEM error naming ulimit -l", err)
		require.ErrorIs(t, err, syscall.ENOMEM, "Serve = %v, want an ENOMEM error naming ulimit -l", err)
		d := time.Since(start)
		assert.LessOrEqual(t, d, 5*time.Second, "Serve took %v to fail", d)
	})
	t.Run("client memlock", func(t *testing.T) {
		env := newLoopEnv(t, serverConfig{PoolBuffers: 2, BufferSize: 64 << 10}, nil)
		writeFile(t, env.ts.root, "big", 8<<20, 1)
		cl := dialTest(t, env.ts, env.tr, WithConnections(1), WithChunkSize(8<<20))
		env.fab.mu.Lock()
		env.fab.memlock = env.fab.locked + 1<<20
		env.fab.mu.Unlock()
		f, _ := cl.Open(context.Background(), "big")
		start := time.Now()
		_, err := f.ReadAt(make([]byte, 8<<20), 0)
		require.Error(t, err, "read over the limit: %v, want an error naming ulimit -l, not a lost server", err)
		require.ErrorContains(t, err, "ulimit -l", "read over the limit: %v, want an error naming ulimit -l, not a lost server", err)
		require.NotErrorIs(t, err, ErrServerGone, "read over the limit: %v, want an error naming ulimit -l, not a lost server", err)
		d := time.Since(start)
		assert.LessOrEqual(t, d, 5*time.Second, "the read took %v to fail: retried?", d)
	})
}

// Several RDMA WRITEs are in flight at once on one queue pair, the
// completion channel wakes the poller (no busy polling while a write is
// stuck), and a drain ends a stuck write instead of waiting it out.
func TestVerbsWritesInFlightAndDrain(t *testing.T) {
	env := newLoopEnv(t, serverConfig{ConnBuffers: 4, BufferSize: 64 << 10, DrainTimeout: 300 * time.Millisecond}, func(o *verbsOptions) {
		o.flushTimeout = 300 * time.Millisecond
	})
	data := writeFile(t, env.ts.root, "f", 256<<10, 6)
	cl := dialTest(t, env.ts, env.tr, WithConnections(1), WithRequestsPerConn(4), WithChunkSize(64<<10), WithRetryDeadline(0))
	f, _ := cl.Open(context.Background(), "f")
	ep := env.endpoints()[0]
	qp := simQPOf(ep.qpEndpoint)
	env.fab.stall(qp, true)
	t.Cleanup(func() { env.fab.stall(qp, false) }) // a failed check does not leave the read stuck
	done := make(chan error, 1)
	got := make([]byte, len(data))
	go func() {
		_, err := f.ReadAt(got, 0)
		done <- err
	}()
	waitFor(t, "4 WRITEs in flight", func() bool { return env.fab.sendQueueLen(qp) >= 4 })
	// A poller that spins never blocks on the completion channel; one
	// that blocks polls again only when a completion wakes it, and the
	// stuck link completes nothing: the count holds however long it
	// stays stuck, on a loaded machine or not.
	var polls int
	waitFor(t, "the poller blocked on the completion channel (busy polling?)", func() bool {
		var parked bool
		parked, polls = env.fab.parked(qp.cq)
		return parked
	})
	time.Sleep(100 * time.Millisecond) // a stuck link
	n := env.fab.polls(qp.cq) - polls
	assert.LessOrEqual(t, n, 0, "%d polls of the completion queue while nothing completed: busy polling", n)
	env.fab.stall(qp, false)
	err := <-done
	require.NoError(t, err, "read: %v", err)
	require.True(t, bytes.Equal(got, data), "read: %v", err)
	m := env.fab.statsNow().maxOutstanding
	assert.GreaterOrEqual(t, m, 4, "at most %d work requests in flight, want 4", m)

	// Stuck again, then the server drains: Serve returns within the drain
	// timeout plus the flush, not after the 30 s write timeout.
	env.fab.stall(qp, true)
	go func() {
		_, err := f.ReadAt(got, 0)
		done <- err
	}()
	waitFor(t, "a WRITE in flight", func() bool { return env.fab.sendQueueLen(qp) > 0 })
	start := time.Now()
	env.ts.stop(t)
	d := time.Since(start)
	assert.LessOrEqual(t, d, 5*time.Second, "drain took %v with a stuck WRITE", d)
	err = <-done
	assert.Error(t, err, "the stuck read succeeded")
	v := env.fab.Violations()
	require.Empty(t, v, "verbs misuse:\n%s", strings.Join(v, "\n"))
}

// The client binds the queue pair's source to the TCP connection's local
// address and tries the TCP peer's address, then every other address of
// the server's name, until one connects.
func TestVerbsQueuePairAddressSelection(t *testing.T) {
	var lookups []string
	env := newLoopEnvOn(t, "0.0.0.0:0", serverConfig{}, func(o *verbsOptions) {
		o.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			lookups = append(lookups, host)
			return []netip.Addr{netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}, nil
		}
	})
	writeFile(t, env.ts.root, "f", 4096, 1)
	env.fab.unreachable[netip.MustParseAddr("127.0.0.1")] = true
	env.fab.unreachable[netip.MustParseAddr("127.0.0.3")] = true
	_, port, _ := net.SplitHostPort(env.ts.addr)
	addr := net.JoinHostPort("localhost", port)
	cl, err := Dial(context.Background(), addr, WithToken(testTok), WithTransport(env.tr), WithConnections(1),
		WithLogger(quietLogger()), WithTimeout(10*time.Second))
	require.NoError(t, err, "Dial %s: %v", addr, err)
	defer cl.Close()
	_, err = cl.Stat(context.Background(), "f")
	require.NoError(t, err)
	s := env.fab.statsNow()
	var dsts []string
	for i, d := range s.resolveDst {
		dsts = append(dsts, d.Addr().String())
		assert.True(t, s.resolveSrc[i].Addr().IsLoopback(), "resolution %d from %s: not the TCP connection's local address", i, s.resolveSrc[i])
		assert.Equal(t, d.Addr().Is4(), s.resolveSrc[i].Addr().Is4(), "resolution %d from %s: not the TCP connection's local address", i, s.resolveSrc[i])
	}
	// The TCP peer is localhost's first address; 127.0.0.1 is tried once.
	if assert.GreaterOrEqual(t, len(dsts), 2, "queue pair resolutions %v, want every address tried once, ending with 127.0.0.2", dsts) {
		if assert.Equal(t, "127.0.0.2", dsts[len(dsts)-1], "queue pair resolutions %v, want every address tried once, ending with 127.0.0.2", dsts) {
			assert.LessOrEqual(t, strings.Count(strings.Join(dsts, " "), "127.0.0.1"), 1, "queue pair resolutions %v, want every address tried once, ending with 127.0.0.2", dsts)
		}
	}
	if assert.NotEmpty(t, lookups, "lookups %v, want the server's name", lookups) {
		assert.Equal(t, "localhost", lookups[0], "lookups %v, want the server's name", lookups)
	}
}

// When the device will not deregister a region, the client shuts the
// queue pair before giving the memory back, so nothing can land in it
// afterwards, and keeps it pinned.
func TestVerbsFailedDeregistrationShutsTheQueuePair(t *testing.T) {
	env := newLoopEnv(t, serverConfig{}, nil)
	_, vc := loopRaw(t, env.tr.loopback, env.ts.addr)
	buf := make([]byte, 4096)
	rg, err := vc.Register(buf)
	require.NoError(t, err)
	env.fab.mu.Lock()
	env.fab.failDereg = 1
	env.fab.mu.Unlock()
	err = vc.Deregister(rg)
	require.ErrorIs(t, err, ErrRegion, "Deregister with a failing device: %v", err)
	require.ErrorContains(t, err, "queue pair", "Deregister with a failing device: %v", err)
	// The server's device tries the old key now.
	ep := env.endpoints()[0]
	sd := env.serverDevice(t)
	env.fab.mu.Lock()
	var src *simMR
	for _, m := range sd.pd.(*simPD).mrs {
		src = m
		break
	}
	env.fab.mu.Unlock()
	werr := ep.run(workRequest{op: wrWrite, addr: src.base, n: 16, lkey: src.key, raddr: rg.Addr, rkey: rg.Key},
		time.Now().Add(5*time.Second), "late write")
	require.Error(t, werr, "a write after the failed deregistration: %v; landed %v", werr, !bytes.Equal(buf, make([]byte, len(buf))))
	require.True(t, bytes.Equal(buf, make([]byte, len(buf))), "a write after the failed deregistration: %v; landed %v", werr, !bytes.Equal(buf, make([]byte, len(buf))))
	leaked := env.tr.v.leaked.Load()
	assert.EqualValues(t, 1, leaked, "%d pins kept, want the region's", leaked)
}

// GPU regions ask for relaxed ordering where the device has it, and
// register without it where it does not.
func TestVerbsGPURegionsRelaxedOrdering(t *testing.T) {
	for _, tc := range []struct {
		name    string
		relaxed bool
		dmaErr  error
	}{
		{"dma-buf, relaxed", true, nil},
		{"dma-buf, strict device", false, nil},
		{"peermem, relaxed", true, errors.New("CUDA_ERROR_NOT_SUPPORTED")},
		{"peermem, strict device", false, errors.New("CUDA_ERROR_NOT_SUPPORTED")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpu := &fakeGPU{base: 0x7e0000000000, mem: make([]byte, 1<<20)}
			tr := newGPULoopback(gpu)
			tr.fab.devs[0].relaxedOrdering = tc.relaxed
			ts := startServer(t, serverConfig{}, tr)
			data := writeFile(t, ts.root, "w", 100000, 3)
			cl := dialTest(t, ts, tr, WithDeviceMemory(&fakeDeviceMemory{base: gpu.base, dmaErr: tc.dmaErr}))
			f, _ := cl.Open(context.Background(), "w")
			n, err := f.ReadAtDevice(context.Background(), gpu.base, int64(len(data)), 0)
			require.Len(t, data, n, "ReadAtDevice = %d, %v", n, err)
			require.NoError(t, err, "ReadAtDevice = %d, %v", n, err)
			want := RegDmaBuf
			if tc.dmaErr != nil {
				want = RegPeermem
			}
			got := cl.DeviceRegistration()
			require.Equal(t, want, got.Method, "registered by %q (%s), want %q", got.Method, got.Reason, want)
			require.True(t, bytes.Equal(gpu.mem[:len(data)], data), "GPU memory differs")
			var gpuRegs int
			for _, r := range tr.fab.statsNow().registered {
				if r.base < uint64(gpu.base) || r.base >= uint64(gpu.base)+uint64(len(gpu.mem)) {
					continue
				}
				gpuRegs++
				got := r.access&accessRelaxedOrdering != 0
				assert.Equal(t, tc.relaxed, got, "GPU region at 0x%x: relaxed ordering %v, want %v", r.base, got, tc.relaxed)
			}
			require.NotEqualValues(t, 0, gpuRegs, "no GPU registration seen")
		})
	}
}

// A failing event channel is retried with growing pauses, not spun on;
// DEVICE_REMOVAL ends the connections on the device and the listener.
func TestVerbsCMLoopBackoffAndDeviceRemoval(t *testing.T) {
	env := newLoopEnv(t, serverConfig{}, nil)
	writeFile(t, env.ts.root, "f", 1<<20, 8)
	cl := dialTest(t, env.ts, env.tr, WithConnections(2), WithRetryDeadline(0))
	f, _ := cl.Open(context.Background(), "f")

	// Three loops (the server's, the client's two connections') back off
	// from 10 ms, doubling up to 1 s. A pause lasts at least as long as
	// planned, however loaded the machine: each gap between two attempts
	// on a channel is at least its step of that schedule.
	env.fab.setCMErr(syscall.EIO)
	var fails [][]time.Time
	waitFor(t, "three event loops retrying a failing channel", func() bool {
		fails = env.fab.cmFailures()
		n := 0
		for _, at := range fails {
			if len(at) >= 4 {
				n++
			}
		}
		return n >= 3
	})
	env.fab.setCMErr(nil)
	for _, at := range fails {
		want := 10 * time.Millisecond
		for i := 1; i < len(at); i++ {
			gap := at[i].Sub(at[i-1])
			assert.GreaterOrEqual(t, gap, want, "retry %d on a failing event channel after %v, want at least %v: not backing off", i, gap, want)
			want = min(2*want, time.Second)
		}
	}
	_, err := f.ReadAt(make([]byte, 4096), 0)
	require.NoError(t, err, "read after the channel recovered")

	env.fab.removeDevice(env.fab.devs[0])
	waitFor(t, "server queue pairs closed", func() bool { return len(env.endpoints()) == 0 })
	_, err = f.ReadAt(make([]byte, 4096), 0)
	assert.Error(t, err, "read over a removed device succeeded")
	select {
	case err := <-env.ts.done:
		assert.Error(t, err, "Serve returned %v, want the device removal", err)
		assert.ErrorContains(t, err, "removed", "Serve returned %v, want the device removal", err)
		env.ts.done <- nil
	case <-time.After(10 * time.Second):
		assert.Fail(t, "Serve kept running on a removed device")
	}
	cl.Close()
	v := env.fab.Violations()
	require.Empty(t, v, "verbs misuse:\n%s", strings.Join(v, "\n"))
}

var _ = io.EOF
