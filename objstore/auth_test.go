package objstore_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/require"
)

// TestWrongCredentials: a wrong secret, or an access key the store does not
// know, fails with ErrAuth (and fs.ErrPermission), the error names the
// endpoint and where the credentials came from, and the request is sent
// once: no retries, no storm.
func TestWrongCredentials(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	put(t, mc, b, "obj", []byte("data"))
	cases := []struct{ name, key, secret string }{
		{"wrong secret", miniotest.AccessKey, "not-the-secret"},
		{"unknown key", "nobody-at-all", miniotest.SecretKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			px := newHTTPProxy(t, mc.Endpoint())
			cl, err := objstore.New(context.Background(), objstore.WithEndpoint(px.url()),
				objstore.WithStaticCredentials(c.key, c.secret, ""), objstore.WithLogger(slog.New(slog.DiscardHandler)))
			require.NoError(t, err)
			defer cl.Close()
			for _, op := range []struct {
				name string
				run  func() error
			}{
				{"open", func() error { _, err := cl.Open(context.Background(), b, "obj"); return err }},
				{"list", func() error { _, err := cl.List(context.Background(), b, "", "/"); return err }},
			} {
				before := px.heads.Load() + px.lists.Load() + px.gets.Load()
				err := op.run()
				require.ErrorIs(t, err, objstore.ErrAuth, "%s: err = %v, want ErrAuth and fs.ErrPermission", op.name, err)
				require.ErrorIs(t, err, fs.ErrPermission, "%s: err = %v, want ErrAuth and fs.ErrPermission", op.name, err)
				for _, want := range []string{px.url(), "static credentials", "access key " + c.key, "s3://" + b} {
					require.Contains(t, err.Error(), want, "%s: error %q does not say %q", op.name, err, want)
				}
				if n := px.heads.Load() + px.lists.Load() + px.gets.Load() - before; n != 1 {
					t.Fatalf("%s: %d requests for a refused signature, want 1 (no retries)", op.name, n)
				}
				t.Logf("%s: %v", op.name, err)
			}
		})
	}
}

// TestEndpointDown: nothing listens at the endpoint. Stat fails with
// ErrUnavailable naming the endpoint, after retrying for the retry
// deadline and not much longer; a cancelled context ends it at once.
func TestEndpointDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	endpoint := "http://" + l.Addr().String()
	l.Close() // the port is now closed: connections are refused
	const deadline = 700 * time.Millisecond
	cl := client(t, endpoint, objstore.WithRetryDeadline(deadline))
	start := time.Now()
	_, err = cl.Stat(context.Background(), "bucket", "key")
	took := time.Since(start)
	require.ErrorIs(t, err, objstore.ErrUnavailable, "err = %v, want ErrUnavailable naming %s and saying it gave up", err, endpoint)
	require.Contains(t, err.Error(), endpoint, "err = %v, want ErrUnavailable naming %s and saying it gave up", err, endpoint)
	require.Contains(t, err.Error(), "gave up after", "err = %v, want ErrUnavailable naming %s and saying it gave up", err, endpoint)
	// It gives up once the deadline has passed, never sooner; a client
	// that ignored it would retry for DefaultRetryDeadline (30 s), which a
	// loaded machine does not come near.
	if took < deadline || took > objstore.DefaultRetryDeadline/2 {
		t.Fatalf("failed after %v; the retry deadline is %v", took, deadline)
	}
	t.Logf("after %v: %v", took, err)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cl = client(t, endpoint, objstore.WithRetryDeadline(time.Minute))
	start = time.Now()
	_, err = cl.Stat(ctx, "bucket", "key")
	// The context, not the minute of retries, ends it.
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 30*time.Second {
		t.Fatalf("with a 200 ms context: %v after %v, want a deadline error, not retries for the minute of the retry deadline", err, time.Since(start))
	}
}
