package rdmafs

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Files opened from a listing read like opened ones, with no request to
// open them; directories are refused.
func TestOpenInfoFromList(t *testing.T) {
	root := t.TempDir()
	want := []byte("listed, not stat'ed")
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.bin"), want, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	cl := dialTest(t, startServer(t, serverConfig{Root: root}, nil), nil)
	ctx := context.Background()
	ents, err := cl.List(ctx, "")
	require.NoError(t, err)
	var opened, refused int
	for _, e := range ents {
		f, err := cl.OpenInfo(ctx, e.Name(), e)
		if e.IsDir() {
			require.ErrorIs(t, err, ErrInvalid, "OpenInfo(%s, a directory): %v, want ErrInvalid", e.Name(), err)
			refused++
			continue
		}
		require.NoError(t, err)
		got := make([]byte, f.Size())
		if _, err := f.ReadAt(got, 0); err != io.EOF {
			require.NoError(t, err)
		}
		require.Equal(t, string(want), string(got), "read %q, want %q", got, want)
		st, err := cl.Stat(ctx, e.Name())
		require.NoError(t, err)
		require.True(t, st.ModTime().Equal(e.ModTime()), "List says %v/%d, Stat says %v/%d", e.ModTime(), e.Size(), st.ModTime(), st.Size())
		require.Equal(t, e.Size(), st.Size(), "List says %v/%d, Stat says %v/%d", e.ModTime(), e.Size(), st.ModTime(), st.Size())
		opened++
	}
	require.Equal(t, 1, opened, "opened %d, refused %d; want 1 and 1", opened, refused)
	require.Equal(t, 1, refused, "opened %d, refused %d; want 1 and 1", opened, refused)
}
