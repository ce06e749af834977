package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/durable"
)

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// deviceMemory stands in for GPU memory: readable only through ReadBack.
type deviceMemory struct {
	b      []byte
	failAt int64 // ReadBack of a range holding this offset fails; -1 never
}

func (d *deviceMemory) Size() int64 { return int64(len(d.b)) }
func (d *deviceMemory) ReadBack(_ context.Context, off int64, p []byte) error {
	if d.failAt >= off && d.failAt < off+int64(len(p)) {
		return errors.New("device lost")
	}
	copy(p, d.b[off:])
	return nil
}

// fdWriter stands in for a cuFileWrite source: it writes its bytes to the
// descriptor itself and counts the calls.
type fdWriter struct {
	deviceMemory
	calls int
}

func (w *fdWriter) WriteToFile(_ context.Context, fd uintptr, fileOff, srcOff, n int64) (int64, error) {
	w.calls++ // workers > 1 would race; the test uses one
	got, err := unix.Pwrite(int(fd), w.b[srcOff:srcOff+n], fileOff)
	return int64(got), err
}

// noTemps fails if dir holds a temporary file of an AtomicFile.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		require.False(t, durable.IsTempName(e.Name()), "temporary file %s left behind", e.Name())
	}
}

func TestSaveFileByteExact(t *testing.T) {
	dir := t.TempDir()
	for _, size := range testSizes {
		want := randomBytes(size, 3)
		aligned, err := AllocHost(size)
		require.NoError(t, err)
		defer FreeHost(aligned)
		copy(aligned, want)
		unaligned := append(make([]byte, 0, size+3), make([]byte, 3)...)[3:]
		unaligned = append(unaligned, want...)
		srcs := map[string]SaveSource{
			"host-aligned":   HostMemory(aligned),
			"host-unaligned": HostMemory(unaligned),
			"device":         &deviceMemory{b: want, failAt: -1},
		}
		for name, src := range srcs {
			for _, mode := range []DirectMode{DirectAuto, DirectOff} {
				t.Run(fmt.Sprintf("%s/size=%d/direct=%s", name, size, mode), func(t *testing.T) {
					path := filepath.Join(dir, fmt.Sprintf("%s-%d-%s.bin", name, size, mode))
					res, err := SaveFile(context.Background(), path, src, SaveOptions{Direct: mode, ChunkSize: 1 << 20, Checksum: ChecksumSHA256})
					require.NoError(t, err)
					got, err := os.ReadFile(path)
					require.NoError(t, err)
					require.True(t, bytes.Equal(want, got), "bytes differ")
					require.Equal(t, sha256hex(want), res.Digest)
					require.Equal(t, int64(size), res.Bytes)
					require.Equal(t, mode != DirectOff, res.Direct, res.Reason)
					wantRoute := RouteHost
					if name == "device" {
						wantRoute = RouteBounce
					}
					require.Equal(t, wantRoute, res.Route)
					noTemps(t, dir)
				})
			}
		}
	}
}

func TestSaveFileWriterSourceTakesGDSPath(t *testing.T) {
	dir := t.TempDir()
	want := randomBytes(3<<20+17, 5)
	src := &fdWriter{deviceMemory: deviceMemory{b: want, failAt: -1}}
	path := filepath.Join(dir, "gds.bin")
	res, err := SaveFile(context.Background(), path, src, SaveOptions{Workers: 1, ChunkSize: 1 << 20, Checksum: ChecksumCRC32C})
	require.NoError(t, err)
	require.Equal(t, RouteGDS, res.Route)
	require.Equal(t, 3, src.calls) // the 17-byte tail goes through a host buffer
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got))
	f, err := OpenFile(path, DirectOff)
	require.NoError(t, err)
	defer f.Close()
	d, err := DigestSource(context.Background(), f, ChecksumCRC32C, make([]byte, 4096))
	require.NoError(t, err)
	require.Equal(t, d, res.Digest)
}

func TestSaveFileFailureLeavesOldFileAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.bin")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	src := &deviceMemory{b: randomBytes(5<<20, 7), failAt: 3<<20 + 1}
	_, err := SaveFile(context.Background(), path, src, SaveOptions{ChunkSize: 1 << 20})
	require.ErrorContains(t, err, "device lost")
	require.ErrorContains(t, err, path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
	noTemps(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = SaveFile(ctx, path, HostMemory(randomBytes(1<<20, 1)), SaveOptions{})
	require.ErrorIs(t, err, context.Canceled)
	noTemps(t, dir)
}

// mountTmpfs mounts a tmpfs of the given size or skips the test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func TestSaveFileNoSpace(t *testing.T) {
	dir := mountTmpfs(t, "1m")
	path := filepath.Join(dir, "big.bin")
	_, err := SaveFile(context.Background(), path, HostMemory(randomBytes(2<<20, 9)), SaveOptions{})
	var ns *NoSpaceError
	require.ErrorAs(t, err, &ns)
	require.Equal(t, dir, ns.Dir)
	require.EqualValues(t, 2<<20, ns.Needed)
	require.Less(t, ns.Free, int64(2<<20))
	require.ErrorContains(t, err, "destination "+dir+" is full: needed 2097152 bytes more, free")
	_, statErr := os.Stat(path)
	require.ErrorIs(t, statErr, os.ErrNotExist)
	noTemps(t, dir)
}

// SaveFile replaces a file as open(2) with O_TRUNC would: the file keeps
// its permission bits, a symbolic link (or a chain of them) stays a link
// and its target gets the bytes, and a link to nothing is refused,
// naming it, with nothing created.
func TestSaveFileReplacesLikeOpenTrunc(t *testing.T) {
	want := randomBytes(10000, 9)
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, dir string) (path, target string)
		mode   os.FileMode
		refuse string
	}{
		{name: "a 0600 file", mode: 0o600, setup: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "w.bin")
			require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
			require.NoError(t, os.Chmod(p, 0o600))
			return p, p
		}},
		{name: "a 0640 file", mode: 0o640, setup: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "w.bin")
			require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
			require.NoError(t, os.Chmod(p, 0o640))
			return p, p
		}},
		{name: "a link to a file in another directory", mode: 0o600, setup: func(t *testing.T, dir string) (string, string) {
			target := filepath.Join(dir, "store", "blob")
			require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
			require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
			require.NoError(t, os.Chmod(target, 0o600))
			p := filepath.Join(dir, "w.bin")
			require.NoError(t, os.Symlink("store/blob", p))
			return p, target
		}},
		{name: "a chain of links", mode: 0o644, setup: func(t *testing.T, dir string) (string, string) {
			target := filepath.Join(dir, "real.bin")
			require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
			require.NoError(t, os.Chmod(target, 0o644))
			require.NoError(t, os.Symlink("real.bin", filepath.Join(dir, "mid")))
			p := filepath.Join(dir, "w.bin")
			require.NoError(t, os.Symlink("mid", p))
			return p, target
		}},
		{name: "a dangling link", refuse: "symbolic link", setup: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "w.bin")
			require.NoError(t, os.Symlink("missing/blob", p))
			return p, filepath.Join(dir, "missing", "blob")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, target := tc.setup(t, dir)
			_, err := SaveFile(context.Background(), path, HostMemory(want), SaveOptions{Direct: DirectOff})
			if tc.refuse != "" {
				require.ErrorContains(t, err, tc.refuse)
				require.ErrorContains(t, err, path)
				_, err := os.Stat(target)
				require.ErrorIs(t, err, os.ErrNotExist)
				return
			}
			require.NoError(t, err)
			if path != target {
				fi, err := os.Lstat(path)
				require.NoError(t, err)
				require.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
			}
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got))
			fi, err := os.Stat(target)
			require.NoError(t, err)
			require.Equal(t, tc.mode, fi.Mode().Perm())
			noTemps(t, filepath.Dir(target))
		})
	}
}
