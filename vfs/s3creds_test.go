package vfs

import (
	"context"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/objstore"
)

// A long-lived Mux with the default s3:// scheme (what the Python face
// keeps for a process) picks up keys fixed in the environment after the
// store refused the old ones: no new Mux, no restart.
func TestS3MuxCredentialsFixedInEnvironment(t *testing.T) {
	mc := miniotest.StartForTest(t, 1)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "creds"))
	_, err := mc.Put(ctx, "creds", "a.bin", []byte("payload"))
	require.NoError(t, err)
	mc.SetEnv(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")

	m, err := New()
	require.NoError(t, err)
	defer m.Close()
	_, err = m.ReadFile(ctx, "s3://creds/a.bin", 1<<10)
	require.ErrorIs(t, err, objstore.ErrAuth)
	require.ErrorIs(t, err, fs.ErrPermission)

	t.Setenv("AWS_SECRET_ACCESS_KEY", miniotest.SecretKey)
	b, err := m.ReadFile(ctx, "s3://creds/a.bin", 1<<10)
	require.NoError(t, err, "the same Mux reads with the fixed key")
	require.Equal(t, "payload", string(b))
}
