package miniotest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Traffic is what the servers of a deployment counted themselves, in
// their Prometheus metrics: the bytes they sent in S3 responses and the
// GetObject requests they served. Tests compare it with what a client
// claims it fetched.
type Traffic struct {
	SentBytes  int64
	GetObjects int64
}

// Sub is t minus an earlier reading.
func (t Traffic) Sub(before Traffic) Traffic {
	return Traffic{SentBytes: t.SentBytes - before.SentBytes, GetObjects: t.GetObjects - before.GetObjects}
}

// Traffic reads every node's API counters (metrics v3; the servers run
// with MINIO_PROMETHEUS_AUTH_TYPE=public) and adds them up.
func (c *Cluster) Traffic(ctx context.Context) (Traffic, error) {
	var t Traffic
	for i := range c.nodes {
		url := "http://" + c.nodes[i].addr + "/minio/metrics/v3/api/requests"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return t, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return t, fmt.Errorf("miniotest: reading metrics %s: %w", url, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			name, rest, _ := strings.Cut(line, "{")
			labels, value, ok := strings.Cut(rest, "} ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				continue
			}
			switch {
			case name == "minio_api_requests_traffic_sent_bytes" && strings.Contains(labels, `type="s3"`):
				t.SentBytes += int64(v)
			case name == "minio_api_requests_total" && strings.Contains(labels, `name="GetObject"`):
				t.GetObjects += int64(v)
			}
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return t, fmt.Errorf("miniotest: reading metrics %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			return t, fmt.Errorf("miniotest: metrics %s: %s", url, resp.Status)
		}
	}
	return t, nil
}
