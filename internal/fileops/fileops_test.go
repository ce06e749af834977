package fileops

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefault(t *testing.T) {
	dir := t.TempDir()
	fs := Default()
	p := filepath.Join(dir, "a")
	f, err := fs.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	n, err := f.Pwrite([]byte("hello"), 3)
	require.Equal(t, 5, n, "Pwrite = %d, %v", n, err)
	require.NoError(t, err, "Pwrite = %d, %v", n, err)
	n, err = f.Write([]byte("abc"))
	require.Equal(t, 3, n, "Write = %d, %v", n, err)
	require.NoError(t, err, "Write = %d, %v", n, err)
	for _, sync := range []func() error{f.Sync, f.Datasync} {
		require.NoError(t, sync())
	}
	got := make([]byte, 8)
	n, err = f.Pread(got, 0)
	require.Equal(t, 8, n, "Pread = %d, %v, %q", n, err, got)
	require.NoError(t, err, "Pread = %d, %v, %q", n, err, got)
	require.True(t, bytes.Equal(got, []byte("abchello")), "Pread = %d, %v, %q", n, err, got)
	n, err = f.Pread(got, 8)
	require.Zero(t, n, "Pread at the end = %d, %v; want 0, nil as pread(2)", n, err)
	require.NoError(t, err, "Pread at the end = %d, %v; want 0, nil as pread(2)", n, err)
	require.NoError(t, f.Truncate(2))
	st, err := f.Stat()
	require.NoError(t, err, "Stat = %v, %v; name %s", st, err, f.Name())
	require.EqualValues(t, 2, st.Size(), "Stat = %v, %v; name %s", st, err, f.Name())
	require.Equal(t, p, f.Name(), "Stat = %v, %v; name %s", st, err, f.Name())
	require.NotZero(t, f.Fd(), "Stat = %v, %v; name %s", st, err, f.Name())
	require.NoError(t, f.Close())
	q := filepath.Join(dir, "b")
	require.NoError(t, fs.Rename(p, q))
	require.NoError(t, fs.SyncDir(dir))
	require.NoError(t, fs.Remove(q))
	err = fs.SyncDir(filepath.Join(dir, "missing"))
	require.Error(t, err, "SyncDir of a missing directory succeeded")
}
