package rdmafs

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// ServeMetrics serves the Prometheus text on its own port until stopped.
func TestServeMetrics(t *testing.T) {
	ts := startServer(t, ServerConfig{}, TCP())
	addr, stop, err := ts.srv.ServeMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "rdmafs_pool_buffers") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	stop()
	if _, err := http.Get("http://" + addr.String() + "/metrics"); err == nil {
		t.Fatal("the listener still answers after stop")
	}
}
