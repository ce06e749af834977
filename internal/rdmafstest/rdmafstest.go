// Package rdmafstest runs an rdmafs server in the test's process, on an
// ephemeral loopback port, for the tests of packages that read rdmafs://
// URLs through vfs.
package rdmafstest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/gdsload/gdsload/rdmafs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Token is the shared secret the server checks.
var Token = []byte("rdmafstest-token-0123456789abcdef")

// Serve exports root read-only on 127.0.0.1 (port 0) with Token and
// returns the rdmafs://HOST:PORT prefix of its URLs. The server stops, and
// its connections drain, when the test ends.
func Serve(t testing.TB, root string) string {
	t.Helper()
	url, _ := Start(t, root)
	return url
}

// Start is Serve that also returns a function stopping the server before
// the test ends (a server going away); calling it again does nothing.
func Start(t testing.TB, root string) (string, func()) {
	t.Helper()
	srv, err := rdmafs.NewServer(root, rdmafs.WithServerToken(Token), rdmafs.WithBufferPool(16, 256<<10),
		rdmafs.WithServerLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err, "rdmafs server on %s", root)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "listen")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			assert.NoError(t, <-done, "rdmafs server")
		})
	}
	t.Cleanup(stop)
	return "rdmafs://" + ln.Addr().String(), stop
}

// Options are the client options that reach the server.
func Options() []rdmafs.Option {
	return []rdmafs.Option{rdmafs.WithToken(Token), rdmafs.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
}
