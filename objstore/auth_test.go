package objstore_test

import (
	"context"
	"io/fs"
	"log/slog"
	"testing"

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
					require.ErrorContains(t, err, want, "%s: error %q does not say %q", op.name, err, want)
				}
				n := px.heads.Load() + px.lists.Load() + px.gets.Load() - before
				require.EqualValues(t, 1, n, "%s: %d requests for a refused signature, want 1 (no retries)", op.name, n)
				t.Logf("%s: %v", op.name, err)
			}
		})
	}
}
