package loader

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mountRamfs mounts a ramfs (which refuses O_DIRECT) or skips the test.
func mountRamfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func TestDirectFallbackOnRamfs(t *testing.T) {
	dir := mountRamfs(t)
	path := writeRandom(t, dir, 1<<20+3, 11)
	want := sha256sum(t, path)

	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	require.False(t, f.Direct())
	require.Contains(t, f.DirectReason(), "ramfs")

	res, err := Load(context.Background(), []Job{WholeFile(f, NewHostBuffer(make([]byte, f.Size())))},
		Options{Checksum: ChecksumSHA256})
	require.NoError(t, err)
	require.Equal(t, want, res.Files[0].SHA256)
	require.False(t, res.Files[0].Direct)
	require.Contains(t, res.Files[0].Reason, "O_DIRECT refused by ramfs")
	require.Contains(t, res.Reason, "O_DIRECT refused by ramfs", "the top-level reason says why too")

	_, err = OpenFile(path, DirectOn)
	require.ErrorContains(t, err, "ramfs")
}

func TestDirectOnTmpfsOrExt4(t *testing.T) {
	// The default temp dir is on whatever file system the machine has;
	// where it takes O_DIRECT the file must be direct with no reason.
	dir := t.TempDir()
	testenv.NeedDirectIO(t, dir)
	path := writeRandom(t, dir, 8192, 12)
	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	require.True(t, f.Direct(), "%s takes O_DIRECT, but: %s", FSName(path), f.DirectReason())
	require.Empty(t, f.DirectReason())
	require.GreaterOrEqual(t, f.Alignment(), int64(512))
}

// Opening what is not a regular file fails at once, naming what it is: a
// FIFO with no writer must not block the load, under every direct mode.
func TestOpenRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, want string }{{fifo, "a FIFO"}, {dir, "a directory"}, {"/dev/null", "a character device"}} {
		for _, mode := range []DirectMode{DirectAuto, DirectOn, DirectOff} {
			done := make(chan error, 1)
			go func() {
				f, err := OpenFile(tc.path, mode)
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("OpenFile(%s, %v) = %v, want an error saying %q", tc.path, mode, err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("OpenFile(%s, %v) blocked", tc.path, mode)
			}
		}
	}
}

// One probe read per file system: after the first file on it, O_DIRECT
// opens skip the probe and still read correctly.
func TestDirectProbeOncePerFileSystem(t *testing.T) {
	dir := t.TempDir()
	testenv.NeedDirectIO(t, dir)
	a := writeRandom(t, dir, 10000, 1)
	b := writeRandom(t, dir, 5000, 2)
	fa, err := OpenFile(a, DirectAuto)
	require.NoError(t, err)
	defer fa.Close()
	require.True(t, fa.Direct(), fa.DirectReason())
	fi, err := fa.f.Stat()
	require.NoError(t, err)
	key, known := directReadsWork(fa.f.Fd(), fi)
	require.NotNil(t, key)
	require.True(t, known, "the first open's probe is remembered")
	fb, err := OpenFile(b, DirectAuto)
	require.NoError(t, err)
	defer fb.Close()
	require.True(t, fb.Direct())
	want, err := os.ReadFile(b)
	require.NoError(t, err)
	got := make([]byte, len(want))
	n, err := fb.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, want, got[:n])
}

// OpenFileForLoad reads files under 1 MiB through the page cache under
// DirectAuto, saying so; larger files, and any file under DirectOn, keep
// O_DIRECT.
func TestOpenFileForLoadSmallFiles(t *testing.T) {
	dir := t.TempDir()
	testenv.NeedDirectIO(t, dir)
	small := writeRandom(t, dir, SmallFile-1, 1)
	large := writeRandom(t, dir, SmallFile, 2)
	for _, tc := range []struct {
		path   string
		mode   DirectMode
		direct bool
	}{{small, DirectAuto, false}, {large, DirectAuto, true}, {small, DirectOn, true}, {large, DirectOff, false}} {
		f, err := OpenFileForLoad(tc.path, tc.mode)
		require.NoError(t, err)
		require.Equal(t, tc.direct, f.Direct(), "%s %v", filepath.Base(tc.path), tc.mode)
		if tc.path == small && tc.mode == DirectAuto {
			require.Contains(t, f.DirectReason(), "smaller than 1 MiB")
		}
		f.Close()
	}
}
