package stage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of the given size or skips the test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("mounting a size-limited tmpfs needs root")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// requireOnlyComplete fails unless every file under dst (outside the
// sidecar) is a complete copy of its source.
func requireOnlyComplete(t *testing.T, src, dst string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.Contains(p, SidecarName) {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		require.Equal(t, fileSHA(t, filepath.Join(src, rel)), fileSHA(t, p), "partial file %s under its final name", rel)
		n++
		return nil
	}))
	return n
}

func TestStageNoSpace(t *testing.T) {
	dst := mountTmpfs(t, "8m")
	src := t.TempDir()
	for i := range 6 {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), 2<<20+100, uint64(i))
	}

	// Checked before anything is copied.
	_, err := stage(t, dst, Options{}, src)
	var ns *loader.NoSpaceError
	require.ErrorAs(t, err, &ns)
	require.ErrorContains(t, err, fmt.Sprintf("destination %s is full: needed %d bytes more, free ", dst, 6*(2<<20+100)))
	require.Equal(t, 0, requireOnlyComplete(t, src, dst))

	// Met while writing (the check is off, as when something else fills
	// the disk meanwhile): complete files stay, nothing partial or
	// temporary is left.
	_, err = stage(t, dst, Options{Workers: 2, skipSpaceCheck: true}, src)
	require.ErrorAs(t, err, &ns)
	require.True(t, errors.Is(err, unix.ENOSPC))
	require.ErrorContains(t, err, "destination "+dst+" is full: needed ")
	require.Less(t, ns.Free, int64(2<<20+100))
	requireClean(t, dst)
	requireOnlyComplete(t, src, dst)
}
