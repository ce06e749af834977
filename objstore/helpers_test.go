package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/require"
)

// testData is n pseudo-random bytes, different for each seed.
func testData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

var bucketSeq atomic.Int64

// newBucket creates a bucket named after the test, unique in this binary.
func newBucket(t *testing.T, c *miniotest.Cluster) string {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	name = strings.Trim(name, "-")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), bucketSeq.Add(1))
	require.NoError(t, c.MakeBucket(context.Background(), name))
	return name
}

// put writes an object and returns its ETag.
func put(t *testing.T, c *miniotest.Cluster, bucket, key string, data []byte) string {
	t.Helper()
	etag, err := c.Put(context.Background(), bucket, key, data)
	require.NoError(t, err)
	return etag
}

// client makes an objstore client of endpoint with the deployment's root
// credentials, whatever the machine's AWS configuration says.
func client(t testing.TB, endpoint string, opts ...objstore.Option) *objstore.Client {
	t.Helper()
	base := []objstore.Option{
		objstore.WithEndpoint(endpoint),
		objstore.WithStaticCredentials(miniotest.AccessKey, miniotest.SecretKey, ""),
		objstore.WithRegion("us-east-1"),
		objstore.WithLogger(slog.New(slog.DiscardHandler)),
	}
	cl, err := objstore.New(context.Background(), append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// open opens s3://bucket/key.
func open(t *testing.T, cl *objstore.Client, bucket, key string) *objstore.Object {
	t.Helper()
	o, err := cl.Open(context.Background(), bucket, key)
	require.NoError(t, err)
	return o
}

// readAll reads the whole object with one ReadAt.
func readAll(ctx context.Context, o *objstore.Object) ([]byte, error) {
	buf := make([]byte, o.Size())
	n, err := o.ReadAtContext(ctx, buf, 0)
	if err == nil && n != len(buf) {
		err = fmt.Errorf("read %d of %d bytes without an error", n, len(buf))
	}
	return buf, err
}

// httpProxy is a reverse proxy in front of a store that counts what goes
// through it (requests by method, connections opened, the most requests
// in flight at once) and can damage response bodies. The Host header is
// kept, so request signatures made for the proxy's address stay valid.
type httpProxy struct {
	srv      *httptest.Server
	gets     atomic.Int64
	heads    atomic.Int64
	lists    atomic.Int64
	conns    atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
	// corrupt, when set, flips one byte of every GET body that has more
	// than one byte.
	corrupt atomic.Bool
	mu      sync.Mutex
	ranges  []string
}

func newHTTPProxy(t *testing.T, upstream string) *httpProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	require.NoError(t, err)
	hp := &httpProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			if hp.corrupt.Load() && resp.Request.Method == http.MethodGet && resp.ContentLength > 1 {
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					return err
				}
				b[len(b)/2] ^= 0x55
				resp.Body = io.NopCloser(bytes.NewReader(b))
			}
			return nil
		},
		ErrorLog: nil,
	}
	hp.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := hp.inFlight.Add(1)
		defer hp.inFlight.Add(-1)
		for {
			m := hp.maxIn.Load()
			if in <= m || hp.maxIn.CompareAndSwap(m, in) {
				break
			}
		}
		switch {
		case r.Method == http.MethodHead:
			hp.heads.Add(1)
		case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
			hp.lists.Add(1)
		case r.Method == http.MethodGet:
			hp.gets.Add(1)
			hp.mu.Lock()
			hp.ranges = append(hp.ranges, r.Header.Get("Range"))
			hp.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	hp.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			hp.conns.Add(1)
		}
	}
	hp.srv.Start()
	t.Cleanup(hp.srv.Close)
	return hp
}

func (hp *httpProxy) url() string { return hp.srv.URL }

// retryCounter is a slog handler that counts the client's "objstore
// retrying" records, so a test can tell that a fault really hit it.
type retryCounter struct{ n atomic.Int64 }

func (h *retryCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *retryCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "objstore retrying" {
		h.n.Add(1)
	}
	return nil
}

func (h *retryCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *retryCounter) WithGroup(string) slog.Handler      { return h }

// loadWith loads all of o into a new host buffer in 1 MiB chunks, calling
// at(landed) under a lock after each chunk lands (once per chunk, in the
// order they land), and returns the buffer.
func loadWith(ctx context.Context, o *objstore.Object, workers int, at func(landed int64)) ([]byte, error) {
	buf := make([]byte, o.Size())
	var mu sync.Mutex
	var landed int64
	_, err := loader.Load(ctx, []loader.Job{loader.WholeFile(o, loader.NewHostBuffer(buf))},
		loader.Options{Workers: workers, ChunkSize: 1 << 20, OnProgress: func(n int64) {
			mu.Lock()
			defer mu.Unlock()
			landed += n
			if at != nil {
				at(landed)
			}
		}})
	return buf, err
}
