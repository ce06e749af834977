package rdmafs

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// cachedServer returns a Server over a fresh export root holding a
// regular file, a directory, a FIFO and symbolic links inside and outside
// the root; it skips the test where this kernel refuses openat2 with
// RESOLVE_CACHED (before Linux 5.12, or under a seccomp filter), which
// testenv's probe of the kernel tells, not the server's own fallback.
func cachedServer(t *testing.T) (*Server, string, []byte) {
	t.Helper()
	dir := t.TempDir()
	if ok, reason := testenv.CachedOpenat2(dir); !ok {
		t.Skipf("the server opens through os.Root here: %s", reason)
	}
	root := filepath.Join(dir, "export")
	data := bytes.Repeat([]byte("gdsload "), 40000)
	outside := filepath.Join(dir, "outside")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(root, "sub"), 0o755),
		os.WriteFile(filepath.Join(root, "sub", "f"), data, 0o600),
		os.WriteFile(outside, data, 0o600),
		syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600),
	} {
		require.NoError(t, err)
	}
	for name, target := range map[string]string{
		"inside":  "sub/f",
		"abs-out": outside,
		"rel-out": "../outside",
		"magic":   "/proc/self/root" + outside,
	} {
		symlinkFollowable(t, target, filepath.Join(root, name))
	}
	s, err := newServer(serverConfig{Root: root, InsecureNoToken: true})
	require.NoError(t, err)
	if s.rootConn == nil {
		// The temporary directory is not on a filesystem rawOpenDir
		// accepts (overlayfs in a container, say): test the raw path on it
		// all the same.
		dir, err := s.root.Open(".")
		require.NoError(t, err)
		rc, err := dir.SyscallConn()
		require.NoError(t, err)
		s.rootDir, s.rootConn = dir, rc
	}
	t.Cleanup(func() { s.root.Close(); s.rootDir.Close() })
	return s, root, data
}

// TestOpenCached checks the raw open of a READ's file: it opens regular
// files beneath the export root, directly or through a symbolic link that
// stays beneath it, and leaves everything else (and every error) to the
// os.Root path, which refuses it with the usual error.
func TestOpenCached(t *testing.T) {
	s, _, data := cachedServer(t)
	for _, tc := range []struct {
		name string
		open bool
	}{
		{name: "sub/f", open: true},
		{name: "inside", open: true},
		{name: "sub"},     // a directory
		{name: "fifo"},    // not a regular file
		{name: "missing"}, // ENOENT
		{name: "abs-out"}, // an absolute link, outside
		{name: "rel-out"}, // a relative link leading outside
		{name: "magic"},   // through /proc
		{name: "../outside"},
		{name: "sub/f/x"}, // ENOTDIR
	} {
		t.Run(tc.name, func(t *testing.T) {
			sf := s.openCached(tc.name)
			require.EqualValues(t, tc.open, (sf != nil), "openCached(%q) opened: %v, want %v", tc.name, sf != nil, tc.open)
			if sf == nil {
				return
			}
			defer sf.close()
			require.Nil(t, sf.f, "openCached(%q) = os.File %v, size %d, mode %#o; want a raw descriptor of a %d-byte regular file", tc.name, sf.f, sf.st.Size, sf.st.Mode, len(data))
			require.EqualValues(t, int64(len(data)), sf.st.Size, "openCached(%q) = os.File %v, size %d, mode %#o; want a raw descriptor of a %d-byte regular file", tc.name, sf.f, sf.st.Size, sf.st.Mode, len(data))
			require.EqualValues(t, syscall.S_IFREG, sf.st.Mode&syscall.S_IFMT, "openCached(%q) = os.File %v, size %d, mode %#o; want a raw descriptor of a %d-byte regular file", tc.name, sf.f, sf.st.Size, sf.st.Mode, len(data))
			got := make([]byte, len(data))
			_, err := fdReaderAt(sf.fd).ReadAt(got, 0)
			require.NoError(t, err, "reading what openCached(%q) opened: %v, or bytes differ", tc.name, err)
			require.True(t, bytes.Equal(got, data), "reading what openCached(%q) opened: %v, or bytes differ", tc.name, err)
			n, err := fdReaderAt(sf.fd).ReadAt(make([]byte, 10), int64(len(data))-4)
			require.Equal(t, 4, n, "ReadAt across the end = %d, %v; want 4, EOF", n, err)
			require.Equal(t, io.EOF, err, "ReadAt across the end = %d, %v; want 4, EOF", n, err)
		})
	}
	require.False(t, cachedOpenOff.Load(), "a refusal turned openCached off for the whole server")
}

// TestResidentRange checks the page-cache test that decides whether a
// sendfile piece may be a raw call: true for bytes just written, false
// once the kernel dropped them and for bytes past the end.
func TestResidentRange(t *testing.T) {
	if ok, reason := testenv.Cachestat(t.TempDir()); !ok {
		t.Skipf("every sendfile is a plain system call here: %s", reason)
	}
	data := make([]byte, 1<<20)
	f := openTemp(t, data)
	fd := f.Fd()
	require.True(t, residentRange(fd, 4096, 8192), "residentRange of bytes just written = false, want true")
	require.True(t, residentRange(fd, 1, int64(len(data))-2), "residentRange of the whole file, unaligned = false, want true")
	require.False(t, residentRange(fd, int64(len(data)), 4096), "residentRange past the end = true, want false")
	var st unix.Statfs_t
	require.NoError(t, unix.Fstatfs(int(fd), &st))
	if st.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages the kernel cannot drop: the rest needs a disk filesystem")
	}
	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fadvise(int(fd), 0, 0, unix.FADV_DONTNEED))
	require.False(t, residentRange(fd, 0, int64(len(data))), "residentRange after the kernel dropped the file's pages = true, want false")
}

// TestSendFileDataCachedAndCold sends from a file openCached opened, with
// its pages in the page cache (raw sendfile) and dropped from it (plain
// sendfile, which waits for the disk): the same bytes either way.
func TestSendFileDataCachedAndCold(t *testing.T) {
	s, _, data := cachedServer(t)
	for _, cold := range []bool{false, true} {
		sf := s.openCached("sub/f")
		require.NotNil(t, sf, "openCached(sub/f) = nil")
		if cold {
			require.NoError(t, unix.Fadvise(int(sf.fd), 0, 0, unix.FADV_DONTNEED))
		}
		c, srv := tcpPair(t)
		got := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(newStreamReader(c))
			got <- b
		}()
		sent, err := sendFileData(srv, []byte("HDR"), sf, 100, int64(len(data)))
		srv.Close()
		sf.close()
		require.NoError(t, err, "cold %v: sendFileData = %d, %v; want %d, nil", cold, sent, err, len(data)-100)
		require.EqualValues(t, int64(len(data))-100, sent, "cold %v: sendFileData = %d, %v; want %d, nil", cold, sent, err, len(data)-100)
		b := <-got
		require.True(t, bytes.Equal(b, append([]byte("HDR"), data[100:]...)), "cold %v: received %d bytes that differ from the header and the file", cold, len(b))
	}
}

// TestWriteBuffers checks the raw writev that sends the server's frames:
// every byte in order, across empty buffers, more buffers than one call
// takes, and more bytes than the socket holds (the poller's wait).
func TestWriteBuffers(t *testing.T) {
	big := bytes.Repeat([]byte{0xa5}, 16<<20)
	for _, tc := range []struct {
		name string
		bufs [][]byte
	}{
		{"one", [][]byte{[]byte("header")}},
		{"empties", [][]byte{{}, []byte("a"), {}, {}, []byte("bc"), {}}},
		{"many", [][]byte{[]byte("1"), []byte("22"), []byte("333"), []byte("4444"), []byte("55555"), []byte("666666")}},
		{"big", [][]byte{[]byte("hdr"), big, []byte("tail")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, srv := tcpPair(t)
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(c)
				got <- b
			}()
			want := bytes.Join(tc.bufs, nil)
			require.NoError(t, writeBuffers(srv, append([][]byte(nil), tc.bufs...)))
			srv.Close()
			b := <-got
			require.True(t, bytes.Equal(b, want), "received %d bytes, want the %d written, in order", len(b), len(want))
		})
	}
}

// TestLocalFilesystem checks which filesystems the raw open is allowed
// on: local disk filesystems, not those whose open or close waits on a
// network or a daemon.
func TestLocalFilesystem(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  int64
		want bool
	}{
		{"ext4", unix.EXT4_SUPER_MAGIC, true},
		{"xfs", unix.XFS_SUPER_MAGIC, true},
		{"btrfs", unix.BTRFS_SUPER_MAGIC, true},
		{"tmpfs", unix.TMPFS_MAGIC, true},
		{"nfs", unix.NFS_SUPER_MAGIC, false},
		{"fuse", unix.FUSE_SUPER_MAGIC, false},
		{"cifs", unix.CIFS_SUPER_MAGIC, false},
		{"overlayfs", unix.OVERLAYFS_SUPER_MAGIC, false},
		{"unknown", 0x12345678, false},
	} {
		got := localFilesystem(tc.typ)
		assert.Equal(t, tc.want, got, "localFilesystem(%s) = %v, want %v", tc.name, got, tc.want)
	}
}

// TestServeLogsOpenPath checks that a serving server says how its READs
// open files: the raw path at debug level, or os.Root at info level with
// the reason (an export root on a filesystem other than a local disk
// one, such as overlayfs in a container).
func TestServeLogsOpenPath(t *testing.T) {
	var logs lockedBuffer
	ts := startServer(t, serverConfig{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil)
	want := "level=INFO msg=\"rdmafs READs open files through os.Root with plain system calls\" why="
	if ts.srv.rootConn != nil {
		want = "level=DEBUG msg=\"rdmafs READs open files with raw openat2 calls beneath the export root\""
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		require.False(t, time.Now().After(deadline), "the server's log lacks %q:\n%s", want, logs.String())
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFdReaderAtErrorsNameNoPath: what the server's own digest reads
// fail with reaches the client, so it must not say where the export
// lives (a pread of a directory fails with EISDIR).
func TestFdReaderAtErrorsNameNoPath(t *testing.T) {
	dir := t.TempDir()
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer d.Close()
	n, err := fdReaderAt(d.Fd()).ReadAt(make([]byte, 10), 0)
	require.EqualValues(t, 0, n, "ReadAt of a directory = %d, %v; want 0 and EISDIR without the path %s", n, err, dir)
	require.ErrorIs(t, err, syscall.EISDIR, "ReadAt of a directory = %d, %v; want 0 and EISDIR without the path %s", n, err, dir)
	require.NotContains(t, err.Error(), dir, "ReadAt of a directory = %d, %v; want 0 and EISDIR without the path %s", n, err, dir)
}
