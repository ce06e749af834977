package rdmafs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/toxitest"
	"github.com/stretchr/testify/require"
)

// Network faults between a real TCP client and server, made by toxiproxy
// (in-process, see toxiproxy_proxy_test.go): latency, a bandwidth cap,
// stalls, connection resets and tiny TCP segments. Every transfer either
// completes byte-exact or fails with ErrServerGone or a deadline error
// within the deadlines the client was given; none hangs.

// dialVia dials the server through addr (a proxy) with test defaults.
func dialVia(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	base := []Option{WithToken(testTok), WithLogger(quietLogger()), WithTimeout(5 * time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, addr, append(base, opts...)...)
	require.NoError(t, err, "Dial through the proxy at %s: %v", addr, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// readAsync starts reading all of f into a new buffer and returns the
// channel that receives the outcome.
func readAsync(ctx context.Context, f *File) (<-chan error, []byte) {
	buf := make([]byte, f.Size())
	done := make(chan error, 1)
	go func() {
		n, err := f.ReadAtContext(ctx, buf, 0)
		if err == nil && n != len(buf) {
			err = fmt.Errorf("read %d of %d bytes without an error", n, len(buf))
		}
		done <- err
	}()
	return done, buf
}

// wait returns the outcome of a readAsync, failing the test if it takes
// longer than limit (a hang).
func wait(t *testing.T, done <-chan error, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		require.FailNow(t, "read still running", "after %v: the client hangs on the fault", limit)
		return nil
	}
}

// TestToxiproxyLatency: 50 ms ± 20 ms added in each direction; a stat
// takes at least the added round trip (so the toxics are in the path) and
// a pipelined 6 MiB read over four connections arrives byte-exact.
func TestToxiproxyLatency(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	data := writeFile(t, ts.root, "ckpt/shard.bin", 6<<20+7, 11)
	px := toxitest.New(t, ts.addr)
	for _, stream := range []string{"downstream", "upstream"} {
		px.Add("latency_"+stream, "latency", stream, map[string]any{"latency": 50, "jitter": 20})
	}
	cl := dialVia(t, px.Addr(), WithChunkSize(1<<20))
	ctx := context.Background()
	start := time.Now()
	f, err := cl.Open(ctx, "ckpt/shard.bin")
	require.NoError(t, err)
	rtt := time.Since(start)
	require.GreaterOrEqual(t, rtt, 60*time.Millisecond, "stat took %v through a proxy adding at least 30 ms each way: the toxics are not in the path", rtt)
	done, got := readAsync(ctx, f)
	require.NoError(t, wait(t, done, 10*time.Second), "read with latency")
	require.True(t, bytes.Equal(got, data), "read with latency: data differs from the file")
	// A read straddling two chunks, at an odd offset.
	part := make([]byte, 1<<20+3)
	_, err = f.ReadAt(part, 1<<20-5)
	require.NoError(t, err, "unaligned read with latency: %v (or data differs)", err)
	require.True(t, bytes.Equal(part, data[1<<20-5:2<<20-2]), "unaligned read with latency: %v (or data differs)", err)
}

// TestToxiproxyBandwidth: each connection is capped at 20 MB/s; a 16 MiB
// read over two connections arrives byte-exact (through sendfile: no CRC)
// and no faster than the two caps allow together.
func TestToxiproxyBandwidth(t *testing.T) {
	const rateKBs, conns = 20000, 2 // toxiproxy rates are in KB/s, per connection
	ts := startServer(t, serverConfig{}, nil)
	data := writeFile(t, ts.root, "big", 16<<20, 12)
	px := toxitest.New(t, ts.addr)
	px.Add("bandwidth", "bandwidth", "downstream", map[string]any{"rate": rateKBs})
	cl := dialVia(t, px.Addr(), WithConnections(conns), WithCRC(false), WithChunkSize(1<<20))
	f, err := cl.Open(context.Background(), "big")
	require.NoError(t, err)
	start := time.Now()
	done, got := readAsync(context.Background(), f)
	require.NoError(t, wait(t, done, 10*time.Second), "read under a bandwidth cap")
	elapsed := time.Since(start)
	require.True(t, bytes.Equal(got, data), "read under a bandwidth cap: data differs from the file")
	floor := time.Duration(float64(len(data)) / (conns * rateKBs * 1000) * float64(time.Second))
	require.GreaterOrEqual(t, elapsed, floor*9/10, "16 MiB arrived in %v, faster than %d connections at %d KB/s allow (%v): the cap is not in the path", elapsed, conns, rateKBs, floor)
	t.Logf("16 MiB in %v (floor %v)", elapsed, floor)
}

// TestToxiproxyStall: mid-transfer, the path stops delivering (toxiproxy's
// timeout toxic with timeout 0 drops everything and closes nothing, like a
// black hole). The read fails within its deadline: the request timeout
// plus the retry deadline (ErrServerGone, saying it gave up), or the
// caller's context deadline.
func TestToxiproxyStall(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	writeFile(t, ts.root, "f", 8<<20, 13)
	const timeout = 400 * time.Millisecond
	cases := []struct {
		name        string
		stream      string // which direction stalls
		retry       time.Duration
		ctxDeadline time.Duration // 0: none
	}{
		{"replies/retry-deadline", "downstream", time.Second, 0},
		{"requests/context-deadline", "upstream", 30 * time.Second, 1200 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			px := toxitest.New(t, ts.addr)
			// 8 MB/s per connection keeps the 8 MiB read going for about
			// half a second, so the stall lands mid-transfer.
			px.Add("bandwidth", "bandwidth", "downstream", map[string]any{"rate": 8000})
			cl := dialVia(t, px.Addr(), WithConnections(2), WithChunkSize(1<<20),
				WithTimeout(timeout), WithRetryDeadline(c.retry))
			ctx := context.Background()
			f, err := cl.Open(ctx, "f")
			require.NoError(t, err)
			if c.ctxDeadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.ctxDeadline)
				defer cancel()
			}
			start := time.Now()
			done, _ := readAsync(ctx, f)
			time.Sleep(150 * time.Millisecond)
			px.Add("stall", "timeout", c.stream, map[string]any{"timeout": 0})
			stalled := time.Now()
			err = wait(t, done, 15*time.Second)
			require.Error(t, err, "read through a stalled path succeeded")
			if c.ctxDeadline == 0 {
				require.ErrorIs(t, err, ErrServerGone)
				require.ErrorContains(t, err, "retry deadline", "error %q does not say that retries ran out", err)
			} else if c.ctxDeadline > 0 {
				require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrServerGone), "err = %v, want a deadline error or ErrServerGone", err)
			}
			// Pieces in flight at the stall each retry for up to the retry
			// deadline; an attempt waits at most about two request timeouts
			// (for a credit, then for its reply). Two seconds of slack for
			// the race detector on a busy two-core machine; a hang is caught
			// by wait's 15 s.
			limit, since := c.retry+3*timeout+2*time.Second, time.Since(stalled)
			if c.ctxDeadline > 0 {
				limit, since = c.ctxDeadline+time.Second, time.Since(start)
			}
			require.LessOrEqual(t, since, limit, "failed after %v, over the %v its deadlines allow: %v", since, limit, err)
			t.Logf("failed after %v: %v", since, err)
			closed := make(chan struct{})
			go func() { cl.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				require.FailNow(t, "Close hangs on stalled connections")
			}
		})
	}
}

// TestToxiproxyResetPeer: mid-transfer every connection is reset (RST),
// and new ones are reset as soon as the server speaks, for 400 ms. With
// retries the read redials until the resets stop and completes byte-exact
// (the retry log shows the resets hit it); without retries it fails at once
// with ErrServerGone.
func TestToxiproxyResetPeer(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	data := writeFile(t, ts.root, "f", 8<<20, 14)
	for _, retry := range []time.Duration{10 * time.Second, 0} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
			px := toxitest.New(t, ts.addr)
			px.Add("bandwidth", "bandwidth", "downstream", map[string]any{"rate": 8000})
			retries := &retryCounter{}
			cl := dialVia(t, px.Addr(), WithConnections(2), WithChunkSize(1<<20), WithTimeout(2*time.Second),
				WithRetryDeadline(retry), WithLogger(slog.New(retries)))
			f, err := cl.Open(context.Background(), "f")
			require.NoError(t, err)
			done, got := readAsync(context.Background(), f)
			time.Sleep(150 * time.Millisecond)
			px.Add("reset", "reset_peer", "downstream", map[string]any{"timeout": 0})
			time.Sleep(400 * time.Millisecond)
			px.Remove("reset")
			err = wait(t, done, 15*time.Second)
			if retry == 0 {
				require.ErrorIs(t, err, ErrServerGone, "without retries: err = %v, want ErrServerGone", err)
				return
			}
			require.NoError(t, err, "read across resets with a %v retry deadline: %v", retry, err)
			require.True(t, bytes.Equal(got, data), "read across resets: data differs from the file")
			require.NotEqualValues(t, 0, retries.n.Load(), "the read never retried: the resets did not hit the transfer")
			t.Logf("%d retries", retries.n.Load())
		})
	}
}

// TestToxiproxySlicer: every byte in both directions arrives in tiny TCP
// segments (21 to 101 bytes from the server, 2 to 12 to it, with pauses), so frame
// headers, payloads and data are all split at arbitrary points. Stat, list
// and reads (whole file and an unaligned range; with and without CRC) are
// byte-exact.
func TestToxiproxySlicer(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	data := writeFile(t, ts.root, "d/f", 256<<10+3, 15)
	px := toxitest.New(t, ts.addr)
	const maxSlice, delay, conns = 61 + 40, 10 * time.Microsecond, 2
	px.Add("slicer_down", "slicer", "downstream", map[string]any{"average_size": 61, "size_variation": 40, "delay": delay.Microseconds()})
	px.Add("slicer_up", "slicer", "upstream", map[string]any{"average_size": 7, "size_variation": 5, "delay": delay.Microseconds()})
	for _, crc := range []bool{true, false} {
		t.Run(fmt.Sprintf("crc=%v", crc), func(t *testing.T) {
			cl := dialVia(t, px.Addr(), WithCRC(crc), WithChunkSize(64<<10), WithConnections(conns))
			ctx := context.Background()
			ents, err := cl.List(ctx, "d")
			require.NoError(t, err, "list through sliced segments: %v %v", ents, err)
			require.Len(t, ents, 1, "list through sliced segments: %v %v", ents, err)
			require.EqualValues(t, "f", ents[0].Name(), "list through sliced segments: %v %v", ents, err)
			require.EqualValues(t, int64(len(data)), ents[0].Size(), "list through sliced segments: %v %v", ents, err)
			f, err := cl.Open(ctx, "d/f")
			require.NoError(t, err)
			start := time.Now()
			done, got := readAsync(ctx, f)
			require.NoError(t, wait(t, done, 10*time.Second), "read through sliced segments")
			// At most maxSlice bytes per segment, a pause after each, the
			// segments of each connection in sequence.
			floor := time.Duration(len(data)/maxSlice/conns) * delay
			el := time.Since(start)
			require.GreaterOrEqual(t, el, floor, "read took %v, less than the %v the slicer's pauses add: the slicer is not in the path", el, floor)
			require.True(t, bytes.Equal(got, data), "read through sliced segments: data differs from the file")
			part := make([]byte, 70001)
			_, err = f.ReadAt(part, 4093)
			require.NoError(t, err, "unaligned read through sliced segments: %v (or data differs)", err)
			require.True(t, bytes.Equal(part, data[4093:4093+len(part)]), "unaligned read through sliced segments: %v (or data differs)", err)
		})
	}
}
