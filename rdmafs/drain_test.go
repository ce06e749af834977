package rdmafs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrainFinishesInFlightReads: on cancel the server says GOODBYE, the
// read already in flight completes in full, then the connection closes and
// Serve returns nil.
func TestDrainFinishesInFlightReads(t *testing.T) {
	ts := startServer(t, serverConfig{BufferSize: 64 << 10, PoolBuffers: 4}, nil)
	writeFile(t, ts.root, "f", 32<<20, 2)
	r := rawDial(t, ts.addr)
	r.mustWelcome(testTok)
	r.send(wire.TypeRead, 1, wire.Read{Length: 32 << 20, Name: "f"}.Append(nil))
	for ts.srv.metrics.bytesSent.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ts.cancel()
	var got int
	var done, bye bool
	for !(done && bye) {
		h, p, err := r.recv()
		require.NoError(t, err, "after %d bytes (done=%v goodbye=%v): %v", got, done, bye, err)
		switch h.Type {
		case wire.TypeData:
			got += len(p)
		case wire.TypeReadDone:
			done = true
		case wire.TypeGoodbye:
			bye = true
		default:
			require.FailNow(t, "unexpected frame", "%s", h.Type)
		}
	}
	require.Equal(t, 32<<20, got, "in-flight read delivered %d bytes, want %d", got, 32<<20)
	r.expectClosed()
	select {
	case err := <-ts.done:
		ts.done <- err
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Serve did not return after drain")
	}
}

func TestClientAfterDrainGetsServerGone(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	writeFile(t, ts.root, "f", 10, 1)
	cl := dialTest(t, ts, nil, WithRetryDeadline(300*time.Millisecond))
	ts.stop(t)
	_, err := cl.Stat(context.Background(), "f")
	require.ErrorIs(t, err, ErrServerGone, "err = %v, want ErrServerGone", err)
}

func TestMetrics(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	writeFile(t, ts.root, "f", 5000, 1)
	cl := dialTest(t, ts, nil, WithConnections(1))
	f, err := cl.Open(context.Background(), "f")
	require.NoError(t, err)
	_, err = f.ReadAt(make([]byte, 5000), 0)
	require.False(t, err != nil && err != io.EOF, err)
	cl.Stat(context.Background(), "missing")
	srv := httptest.NewServer(ts.srv.MetricsHandler())
	defer srv.Close()
	want := []string{
		"rdmafs_sent_bytes_total 5000\n",
		`rdmafs_requests_total{op="read"} 1` + "\n",
		`rdmafs_requests_total{op="stat"} 2` + "\n",
		`rdmafs_errors_total{code="NOT_FOUND"} 1` + "\n",
		`rdmafs_request_duration_seconds_count{op="read"} 1` + "\n",
		`rdmafs_request_duration_seconds_bucket{op="read",le="+Inf"} 1` + "\n",
		"# TYPE rdmafs_request_duration_seconds histogram\n",
		"rdmafs_connections_active 1\n",
	}
	// Handlers record their latency just after sending the reply: poll
	// briefly instead of racing them.
	var body []byte
	var resp *http.Response
	for deadline := time.Now().Add(2 * time.Second); ; {
		var err error
		resp, err = srv.Client().Get(srv.URL)
		require.NoError(t, err)
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		missing := ""
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		require.False(t, time.Now().After(deadline), "metrics lack %q:\n%s", missing, body)
		time.Sleep(10 * time.Millisecond)
	}
	ct := resp.Header.Get("Content-Type")
	assert.True(t, strings.HasPrefix(ct, "text/plain; version=0.0.4"), "Content-Type %q", ct)
}
