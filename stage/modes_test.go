package stage

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A staged file keeps its source's permission bits and modification time,
// as `cp -p` and rclone keep them, and a second stage still finds it
// unchanged.
func TestStageKeepsModeAndModTime(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := []struct {
		rel   string
		mode  fs.FileMode
		mtime time.Time
	}{
		{"secret.bin", 0o600, time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)},
		{"sub/run.sh", 0o750, time.Date(2019, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"sub/big.bin", 0o644, time.Date(2024, 6, 1, 0, 0, 0, 123456789, time.UTC)},
	}
	for i, f := range files {
		p := writeFile(t, src, f.rel, 3<<20*i+10, uint64(i))
		require.NoError(t, os.Chmod(p, f.mode))
		require.NoError(t, os.Chtimes(p, f.mtime, f.mtime))
	}
	for range 2 {
		_, err := stage(t, dst, Options{Workers: 2}, src)
		require.NoError(t, err)
		for _, f := range files {
			st, err := os.Stat(filepath.Join(dst, filepath.FromSlash(f.rel)))
			require.NoError(t, err)
			require.Equal(t, f.mode, st.Mode().Perm(), f.rel)
			require.True(t, f.mtime.Equal(st.ModTime()), "%s: modification time %v, the source's %v", f.rel, st.ModTime(), f.mtime)
		}
	}
	res, err := stage(t, dst, Options{Workers: 2}, src)
	require.NoError(t, err)
	require.Zero(t, res.Copied, "unchanged files are not staged again")
}
