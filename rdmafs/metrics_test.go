package rdmafs

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// ServeMetrics serves the Prometheus text on its own port until stopped.
func TestServeMetrics(t *testing.T) {
	ts := startServer(t, serverConfig{}, TCP())
	addr, stop, err := ts.srv.ServeMetrics("127.0.0.1:0")
	require.NoError(t, err)
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.EqualValues(t, 200, resp.StatusCode, "GET /metrics: %d %s", resp.StatusCode, b)
	require.Contains(t, string(b), "rdmafs_pool_buffers", "GET /metrics: %d %s", resp.StatusCode, b)
	stop()
	_, err = http.Get("http://" + addr.String() + "/metrics")
	require.Error(t, err, "the listener still answers after stop")
}
