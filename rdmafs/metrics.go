package rdmafs

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram.
var latencyBuckets = [...]float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

var opNames = [...]string{"stat", "list", "read"}

const (
	opStat = iota
	opList
	opRead
)

type histogram struct {
	counts [len(latencyBuckets) + 1]atomic.Uint64
	sumNs  atomic.Uint64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets[:], s)
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// metrics holds the server's counters. Everything is atomic; the text
// format is rendered on demand.
type metrics struct {
	bytesSent   atomic.Uint64
	requests    [len(opNames)]atomic.Uint64
	latency     [len(opNames)]histogram
	connsTotal  atomic.Uint64
	connsActive atomic.Int64
	authFail    atomic.Uint64
	mu          sync.Mutex
	errors      map[wire.Code]uint64
}

func newMetrics() *metrics { return &metrics{errors: map[wire.Code]uint64{}} }

func (m *metrics) errorSent(c wire.Code) {
	m.mu.Lock()
	m.errors[c]++
	m.mu.Unlock()
}

// write renders the Prometheus text exposition format (version 0.0.4).
func (m *metrics) write(w *strings.Builder, poolInUse, poolSize int) {
	fmt.Fprintf(w, "# HELP rdmafs_sent_bytes_total File data bytes delivered to clients.\n# TYPE rdmafs_sent_bytes_total counter\nrdmafs_sent_bytes_total %d\n", m.bytesSent.Load())
	fmt.Fprintf(w, "# HELP rdmafs_requests_total Requests handled, by operation.\n# TYPE rdmafs_requests_total counter\n")
	for i, op := range opNames {
		fmt.Fprintf(w, "rdmafs_requests_total{op=%q} %d\n", op, m.requests[i].Load())
	}
	fmt.Fprintf(w, "# HELP rdmafs_errors_total ERROR frames sent, by code.\n# TYPE rdmafs_errors_total counter\n")
	m.mu.Lock()
	codes := make([]int, 0, len(m.errors))
	for c := range m.errors {
		codes = append(codes, int(c))
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "rdmafs_errors_total{code=%q} %d\n", wire.Code(c).String(), m.errors[wire.Code(c)])
	}
	m.mu.Unlock()
	fmt.Fprintf(w, "# HELP rdmafs_request_duration_seconds Request latency from decode to completion sent.\n# TYPE rdmafs_request_duration_seconds histogram\n")
	for i, op := range opNames {
		h := &m.latency[i]
		var cum uint64
		for b, le := range latencyBuckets {
			cum += h.counts[b].Load()
			fmt.Fprintf(w, "rdmafs_request_duration_seconds_bucket{op=%q,le=\"%g\"} %d\n", op, le, cum)
		}
		cum += h.counts[len(latencyBuckets)].Load()
		fmt.Fprintf(w, "rdmafs_request_duration_seconds_bucket{op=%q,le=\"+Inf\"} %d\n", op, cum)
		fmt.Fprintf(w, "rdmafs_request_duration_seconds_sum{op=%q} %g\n", op, float64(h.sumNs.Load())/1e9)
		fmt.Fprintf(w, "rdmafs_request_duration_seconds_count{op=%q} %d\n", op, cum)
	}
	fmt.Fprintf(w, "# HELP rdmafs_connections_total Connections accepted.\n# TYPE rdmafs_connections_total counter\nrdmafs_connections_total %d\n", m.connsTotal.Load())
	fmt.Fprintf(w, "# HELP rdmafs_connections_active Connections open now.\n# TYPE rdmafs_connections_active gauge\nrdmafs_connections_active %d\n", m.connsActive.Load())
	fmt.Fprintf(w, "# HELP rdmafs_auth_failures_total Handshakes refused.\n# TYPE rdmafs_auth_failures_total counter\nrdmafs_auth_failures_total %d\n", m.authFail.Load())
	fmt.Fprintf(w, "# HELP rdmafs_pool_buffers_in_use Server data buffers in use.\n# TYPE rdmafs_pool_buffers_in_use gauge\nrdmafs_pool_buffers_in_use %d\n", poolInUse)
	fmt.Fprintf(w, "# HELP rdmafs_pool_buffers Server data buffers in the pool.\n# TYPE rdmafs_pool_buffers gauge\nrdmafs_pool_buffers %d\n", poolSize)
}

// MetricsHandler serves the server's metrics in the Prometheus text format.
// Mount it on a listener separate from the data port.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		s.metrics.write(&b, s.pool.inUse(), s.pool.count())
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	})
}
