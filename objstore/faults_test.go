package objstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/toxitest"
	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDistributedNodeKilled: one of the 4 nodes of the erasure-coded
// cluster is killed (SIGKILL) while a 32 MiB load from another node is a
// quarter done; the load completes byte-exact, from the data and parity
// left on the other three. The node is restarted for the tests after.
func TestDistributedNodeKilled(t *testing.T) {
	mc := sharedCluster(t, 4)
	b := newBucket(t, mc)
	data := testData(32<<20, 21)
	put(t, mc, b, "obj", data)
	const victim = 3
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, mc.Restart(ctx, victim), "restarting node %d", victim+1)
	})
	retries := &retryCounter{}
	cl := client(t, mc.Endpoint(), objstore.WithRangeSize(1<<20), objstore.WithLogger(slog.New(retries)))
	o := open(t, cl, b, "obj")
	killed := false
	got, err := loadWith(context.Background(), o, 4, func(landed int64) {
		if landed >= 8<<20 && !killed {
			killed = true
			mc.Kill(victim)
		}
	})
	require.True(t, killed, "the node was never killed")
	require.NoError(t, err, "load with node %d (%s) killed: %v (or bytes differ)", victim+1, mc.Addr(victim), err)
	require.True(t, bytes.Equal(got, data), "load with node %d (%s) killed: %v (or bytes differ)", victim+1, mc.Addr(victim), err)
	t.Logf("byte-exact with node %d killed at 8 MiB; %d retries", victim+1, retries.n.Load())
	// A fresh read after the kill, with one node still down.
	o = open(t, cl, b, "obj")
	got, err = readAll(context.Background(), o)
	require.NoError(t, err, "read with a node down: %v (or bytes differ)", err)
	require.True(t, bytes.Equal(got, data), "read with a node down: %v (or bytes differ)", err)
}

// TestSingleServerKilled: the only server is killed a quarter into a load.
// Left down, the load fails with ErrUnavailable naming the endpoint,
// within the retry deadline plus a stall timeout; restarted at once, the
// load completes byte-exact through the retries.
func TestSingleServerKilled(t *testing.T) {
	mc := ownCluster(t, 1)
	b := newBucket(t, mc)
	data := testData(32<<20, 22)
	put(t, mc, b, "obj", data)

	t.Run("stays down", func(t *testing.T) {
		const deadline, stall = time.Second, 500 * time.Millisecond
		cl := client(t, mc.Endpoint(), objstore.WithRangeSize(1<<20),
			objstore.WithRetryDeadline(deadline), objstore.WithStallTimeout(stall))
		o := open(t, cl, b, "obj")
		var killedAt time.Time
		_, err := loadWith(context.Background(), o, 4, func(landed int64) {
			if landed >= 8<<20 && killedAt.IsZero() {
				mc.Kill(0)
				killedAt = time.Now()
			}
		})
		took := time.Since(killedAt)
		require.ErrorIs(t, err, objstore.ErrUnavailable, "load with the server gone: %v, want ErrUnavailable naming %s", err, mc.Endpoint())
		require.ErrorContains(t, err, mc.Endpoint(), "load with the server gone: %v, want ErrUnavailable naming %s", err, mc.Endpoint())
		// A client that ignored the deadlines set here would retry for
		// DefaultRetryDeadline (30 s) or hang; a loaded machine adds
		// seconds to the 1.5 s they allow, never fifteen.
		limit := objstore.DefaultRetryDeadline / 2
		require.LessOrEqual(t, took, limit, "failed %v after the kill, over the %v the %v retry deadline and %v stall timeout allow", took, limit, deadline, stall)
		t.Logf("failed %v after the kill: %v", took, err)
	})
	t.Run("restarted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, mc.Restart(ctx, 0))
		retries := &retryCounter{}
		cl := client(t, mc.Endpoint(), objstore.WithRangeSize(1<<20), objstore.WithLogger(slog.New(retries)))
		o := open(t, cl, b, "obj")
		var wg sync.WaitGroup
		var restartErr error
		killed := false
		got, err := loadWith(ctx, o, 4, func(landed int64) {
			if landed >= 8<<20 && !killed {
				killed = true
				mc.Kill(0)
				wg.Go(func() { restartErr = mc.Restart(ctx, 0) })
			}
		})
		wg.Wait()
		require.NoError(t, restartErr)
		require.NoError(t, err, "load across a server restart: %v (or bytes differ)", err)
		require.True(t, bytes.Equal(got, data), "load across a server restart: %v (or bytes differ)", err)
		require.NotEqualValues(t, 0, retries.n.Load(), "no retries: the server was not down during the load")
		t.Logf("byte-exact across a restart; %d retries", retries.n.Load())
	})
}

// TestToxiproxy: network faults between the client and a real server, made
// by toxiproxy. Every load either completes byte-exact or fails with a
// clear error within its deadlines; none hangs.
func TestToxiproxy(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	data := testData(16<<20, 23)
	put(t, mc, b, "obj", data)
	upstream := strings.TrimPrefix(mc.Endpoint(), "http://")

	t.Run("latency", func(t *testing.T) {
		px := toxitest.New(t, upstream)
		px.Add("up", "latency", "upstream", map[string]any{"latency": 20, "jitter": 10})
		px.Add("down", "latency", "downstream", map[string]any{"latency": 20, "jitter": 10})
		cl := client(t, "http://"+px.Addr(), objstore.WithRangeSize(1<<20))
		start := time.Now()
		o := open(t, cl, b, "obj")
		rtt := time.Since(start)
		require.GreaterOrEqual(t, rtt, time.Duration(20*time.Millisecond), "a HEAD took %v through 20±10 ms each way: the toxics are not in the path", rtt)
		got, err := loadWith(context.Background(), o, 4, nil)
		require.NoError(t, err, "load with latency: %v (or bytes differ)", err)
		require.True(t, bytes.Equal(got, data), "load with latency: %v (or bytes differ)", err)
	})
	t.Run("bandwidth", func(t *testing.T) {
		const rateKBs, conc = 16000, 2 // toxiproxy rates are KB/s per connection
		px := toxitest.New(t, upstream)
		px.Add("bw", "bandwidth", "downstream", map[string]any{"rate": rateKBs})
		cl := client(t, "http://"+px.Addr(), objstore.WithRangeSize(1<<20), objstore.WithConcurrency(conc))
		o := open(t, cl, b, "obj")
		start := time.Now()
		got, err := readAll(context.Background(), o)
		took := time.Since(start)
		require.NoError(t, err, "read under a bandwidth cap: %v (or bytes differ)", err)
		require.True(t, bytes.Equal(got, data), "read under a bandwidth cap: %v (or bytes differ)", err)
		floor := time.Duration(float64(len(data)) / (conc * rateKBs * 1000) * float64(time.Second))
		require.GreaterOrEqual(t, took, floor*9/10, "16 MiB in %v, faster than %d connections at %d KB/s allow (%v): the cap is not in the path", took, conc, rateKBs, floor)
		t.Logf("16 MiB in %v (floor %v)", took, floor)
	})
	t.Run("connections cut after 1 MiB", func(t *testing.T) {
		// Every connection is closed after 1.5 MiB of response: each range
		// breaks partway and resumes where it stopped on a new one.
		px := toxitest.New(t, upstream)
		px.Add("limit", "limit_data", "downstream", map[string]any{"bytes": 3 << 19})
		retries := &retryCounter{}
		cl := client(t, "http://"+px.Addr(), objstore.WithRangeSize(4<<20), objstore.WithLogger(slog.New(retries)))
		o := open(t, cl, b, "obj")
		got, err := readAll(context.Background(), o)
		require.NoError(t, err, "read over connections cut every 1.5 MiB: %v (or bytes differ)", err)
		require.True(t, bytes.Equal(got, data), "read over connections cut every 1.5 MiB: %v (or bytes differ)", err)
		require.NotEqualValues(t, 0, retries.n.Load(), "no retries: the toxic did not cut any connection")
		t.Logf("byte-exact after %d retries", retries.n.Load())
	})
	t.Run("resets", func(t *testing.T) {
		// Mid-load, every connection is reset for a moment.
		px := toxitest.New(t, upstream)
		px.Add("slow", "bandwidth", "downstream", map[string]any{"rate": 16000})
		retries := &retryCounter{}
		cl := client(t, "http://"+px.Addr(), objstore.WithRangeSize(1<<20), objstore.WithLogger(slog.New(retries)))
		o := open(t, cl, b, "obj")
		reset := false
		got, err := loadWith(context.Background(), o, 4, func(landed int64) {
			if landed >= 4<<20 && !reset {
				reset = true
				px.Add("reset", "reset_peer", "downstream", map[string]any{"timeout": 0})
				time.AfterFunc(200*time.Millisecond, func() { px.Remove("reset") })
			}
		})
		require.NoError(t, err, "load across resets: %v (or bytes differ)", err)
		require.True(t, bytes.Equal(got, data), "load across resets: %v (or bytes differ)", err)
		require.NotEqualValues(t, 0, retries.n.Load(), "no retries: the resets did not hit the load")
		t.Logf("byte-exact after %d retries", retries.n.Load())
	})
	t.Run("stall", func(t *testing.T) {
		// Mid-load the path stops delivering and closes nothing (a black
		// hole): the load fails within the stall timeout plus the retry
		// deadline, saying the store is unavailable.
		const deadline, stall = time.Second, 300 * time.Millisecond
		px := toxitest.New(t, upstream)
		px.Add("slow", "bandwidth", "downstream", map[string]any{"rate": 16000})
		cl := client(t, "http://"+px.Addr(), objstore.WithRangeSize(1<<20),
			objstore.WithRetryDeadline(deadline), objstore.WithStallTimeout(stall))
		o := open(t, cl, b, "obj")
		var stalledAt time.Time
		_, err := loadWith(context.Background(), o, 4, func(landed int64) {
			if landed >= 4<<20 && stalledAt.IsZero() {
				stalledAt = time.Now()
				px.Add("stall", "timeout", "downstream", map[string]any{"timeout": 0})
			}
		})
		took := time.Since(stalledAt)
		require.ErrorIs(t, err, objstore.ErrUnavailable, "load through a stalled path: %v, want ErrUnavailable", err)
		// As for a killed server: the deadlines set here allow 1.6 s;
		// ignoring them takes 30 s or forever.
		limit := objstore.DefaultRetryDeadline / 2
		require.LessOrEqual(t, took, limit, "failed %v after the stall, over the %v the %v retry deadline and %v stall timeout allow", took, limit, deadline, stall)
		t.Logf("failed %v after the stall: %v", took, err)
	})
}
