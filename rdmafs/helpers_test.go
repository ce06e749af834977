package rdmafs

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testTok = []byte("test-token-0123456789abcdef")

// quietLogger keeps test output readable; failures are reported by the tests.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type testServer struct {
	addr   string
	srv    *Server
	root   string
	cancel context.CancelFunc
	done   chan error
}

// startServer runs a server on tr (TCP on 127.0.0.1:0 when nil) exporting
// cfg.Root (a fresh temp dir when empty), and stops it at cleanup.
func startServer(t testing.TB, cfg serverConfig, tr Transport) *testServer {
	t.Helper()
	return startServerOn(t, cfg, tr, "127.0.0.1:0")
}

// startServerOn is startServer listening on addr.
func startServerOn(t testing.TB, cfg serverConfig, tr Transport, addr string) *testServer {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.Token == nil && !cfg.InsecureNoToken {
		cfg.Token = testTok
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.PoolBuffers == 0 {
		cfg.PoolBuffers = 16
	}
	if cfg.BufferSize == 0 {
		cfg.BufferSize = 256 << 10
	}
	srv, err := newServer(cfg)
	require.NoError(t, err)
	if tr == nil {
		tr = TCP()
	}
	ln, err := tr.Listen(context.Background(), addr)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{addr: ln.Addr().String(), srv: srv, root: cfg.Root, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func (ts *testServer) stop(t testing.TB) {
	ts.cancel()
	select {
	case err := <-ts.done:
		assert.NoError(t, err, "Serve returned %v", err)
		ts.done <- err // let a second stop see it too
	case <-time.After(10 * time.Second):
		assert.Fail(t, "server did not stop within 10s of cancel")
	}
}

// writeFile creates root/name with size pseudo-random bytes and returns them.
func writeFile(t testing.TB, root, name string, size int, seed uint64) []byte {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	p := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return data
}

func dialTest(t *testing.T, ts *testServer, tr Transport, opts ...Option) *Client {
	t.Helper()
	if tr == nil {
		tr = TCP()
	}
	base := []Option{WithToken(testTok), WithTransport(tr), WithLogger(quietLogger()), WithTimeout(10 * time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, ts.addr, append(base, opts...)...)
	require.NoError(t, err, "Dial %s: %v", ts.addr, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// transports lists the transports every data-path test runs over.
func transports() []struct {
	name string
	tr   func() Transport
} {
	return []struct {
		name string
		tr   func() Transport
	}{
		{"tcp", func() Transport { return TCP() }},
		{"loopback", func() Transport { return newLoopback() }},
	}
}
