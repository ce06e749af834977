package rdmafs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// otherInfo is an fs.FileInfo no rdmafs listing made.
type otherInfo struct{}

func (otherInfo) Name() string       { return "a.bin" }
func (otherInfo) Size() int64        { return 3 }
func (otherInfo) Mode() fs.FileMode  { return 0o644 }
func (otherInfo) ModTime() time.Time { return time.Unix(1, 0) }
func (otherInfo) IsDir() bool        { return false }
func (otherInfo) Sys() any           { return nil }

// OpenInfo takes what every OpenInfo takes (a context, the name, an
// fs.FileInfo) and refuses an fs.FileInfo this client's listing did not
// make, and a cancelled context, before making a handle.
func TestOpenInfoRefusesForeignInfo(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.bin"), []byte("abc"), 0o644))
	cl := dialTest(t, startServer(t, serverConfig{Root: root}, nil), nil)
	ctx := context.Background()
	_, err := cl.OpenInfo(ctx, "a.bin", otherInfo{})
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "a.bin")

	fi, err := cl.Stat(ctx, "a.bin")
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = cl.OpenInfo(cancelled, "a.bin", fi)
	require.ErrorIs(t, err, context.Canceled)
	f, err := cl.OpenInfo(ctx, "a.bin", fi)
	require.NoError(t, err)
	require.EqualValues(t, 3, f.Size())
}
