package rdmafs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each server option refuses a value outside its range when applied,
// naming it, and NewServer fails with that error; values inside it are
// what the server runs with.
func TestServerOptions(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name string
		opt  ServerOption
		want string
	}{
		{"no credits", WithCredits(0), "0 credits"},
		{"too many credits", WithCredits(MaxCredits + 1), "1025 credits"},
		{"small buffers", WithBufferPool(4, MinBufferSize-1), "buffer size 4095"},
		{"no buffers", WithBufferPool(0, DefaultBufferSize), "0 pool buffers"},
		{"pool over 64 GiB", WithBufferPool(65, MaxBufferSize), "over the 64 GiB limit"},
		{"no connection buffers", WithConnBuffers(0), "0 connection buffers"},
		{"max read over 1 GiB", WithMaxRead(MaxMaxRead + 1), "max read"},
		{"no connections", WithMaxConns(0), "0 connections"},
		{"bad congestion name", WithTCPCongestion("Not-Valid"), "TCP congestion control"},
		{"zero idle timeout", WithIdleTimeout(0), "idle timeout"},
		{"negative drain timeout", WithDrainTimeout(-time.Second), "drain timeout"},
		{"short token", WithServerToken([]byte("short")), "token"},
		{"nil logger", WithServerLogger(nil), "logger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewServer(root, WithInsecureNoToken(), tc.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	srv, err := NewServer(root, WithServerToken(testTok), WithCredits(2), WithBufferPool(4, 64<<10), WithMaxConns(3),
		WithTCPCongestion(SystemTCPCongestion), WithReadTimeout(time.Second))
	require.NoError(t, err)
	defer srv.root.Close()
	assert.Equal(t, 2, srv.cfg.Credits)
	assert.Equal(t, [2]int{4, 64 << 10}, [2]int{srv.cfg.PoolBuffers, srv.cfg.BufferSize})
	assert.Equal(t, 3, srv.cfg.MaxConns)
	assert.Equal(t, time.Second, srv.cfg.ReadTimeout)
	assert.Equal(t, DefaultWriteTimeout, srv.cfg.WriteTimeout, "a default left alone")
	_, err = NewServer(root)
	require.ErrorContains(t, err, "no token")
}
