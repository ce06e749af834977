package rdmafs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sysStat is the fstat behind fi, as the server's digest cache takes it.
func sysStat(fi os.FileInfo) *syscall.Stat_t { return fi.Sys().(*syscall.Stat_t) }

// readCRC sums file bytes [off, off+n) of f, as a test's compute function.
func readCRC(f *os.File) func(crc uint32, off, n int64) (uint32, error) {
	return func(crc uint32, off, n int64) (uint32, error) {
		b := make([]byte, n)
		if _, err := f.ReadAt(b, off); err != nil {
			return 0, err
		}
		return crc32c(crc, b), nil
	}
}

// openDigestFile writes size random bytes to a file and opens it.
func openDigestFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	dir := t.TempDir()
	data := writeFile(t, dir, "f", size, uint64(size))
	f, err := os.Open(filepath.Join(dir, "f"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, data
}

func TestDigestCacheRanges(t *testing.T) {
	f, data := openDigestFile(t, 5*digestBlock+17)
	fi, err := f.Stat()
	require.NoError(t, err)
	c := newDigestCache(0)
	var computed int64
	compute := func(crc uint32, off, n int64) (uint32, error) {
		computed += n
		return readCRC(f)(crc, off, n)
	}
	ranges := []struct{ off, n int64 }{
		{0, int64(len(data))}, {0, 1}, {1, digestBlock}, {digestBlock, digestBlock},
		{digestBlock - 5, 3*digestBlock + 10}, {4 * digestBlock, digestBlock + 17}, {5 * digestBlock, 17},
	}
	for pass := range 2 {
		for _, r := range ranges {
			fd := c.lookup(sysStat(fi))
			require.NotNil(t, fd, "lookup of a 5 MiB file = nil")
			computed = 0
			got, err := fd.crcRange(0, r.off, r.n, compute)
			require.NoError(t, err)
			want := crc32c(0, data[r.off:r.off+r.n])
			assert.Equal(t, want, got, "pass %d: crc of [%d, +%d) = %08x, want %08x", pass, r.off, r.n, got, want)
			// After the first whole-file pass every whole block is
			// cached: only parts of blocks are read again.
			whole := wholeBlocks(r.off, r.n)
			assert.False(t, pass == 1 && computed != r.n-whole*digestBlock, "pass 2: [%d, +%d) read %d bytes, want %d (only parts of blocks)", r.off, r.n, computed, r.n-whole*digestBlock)
		}
	}
}

// wholeBlocks counts the aligned digest blocks inside [off, off+n).
func wholeBlocks(off, n int64) int64 {
	first := alignUp(off, digestBlock)
	last := (off + n) / digestBlock * digestBlock
	return max(0, (last-first)/digestBlock)
}

func TestDigestCacheChangedFile(t *testing.T) {
	f, _ := openDigestFile(t, 2*digestBlock)
	fi, _ := f.Stat()
	c := newDigestCache(0)
	fd := c.lookup(sysStat(fi))
	_, err := fd.crcRange(0, 0, 2*digestBlock, readCRC(f))
	require.NoError(t, err)
	require.Same(t, fd, c.lookup(sysStat(fi)), "the same file, unchanged, got a new entry")
	// New bytes; the modification time is set apart explicitly so that a
	// file system with coarse timestamps cannot hide the change here.
	newData := bytes.Repeat([]byte{7}, 2*digestBlock)
	require.NoError(t, os.WriteFile(f.Name(), newData, 0o644))
	require.NoError(t, os.Chtimes(f.Name(), time.Time{}, fi.ModTime().Add(time.Second)))
	fi2, _ := f.Stat()
	fd2 := c.lookup(sysStat(fi2))
	require.NotSame(t, fd, fd2, "a changed file kept its cached CRCs")
	got, err := fd2.crcRange(0, 0, 2*digestBlock, readCRC(f))
	require.NoError(t, err, "crc after the change = %08x, %v; want %08x", got, err, crc32c(0, newData))
	require.EqualValues(t, crc32c(0, newData), got, "crc after the change = %08x, %v; want %08x", got, err, crc32c(0, newData))
	assert.Equal(t, 2, c.blocks, "cache holds %d blocks of %d files, want 2 of 1", c.blocks, len(c.files))
	assert.Len(t, c.files, 1, "cache holds %d blocks of %d files, want 2 of 1", c.blocks, len(c.files))
}

func TestDigestCacheBound(t *testing.T) {
	c := newDigestCache(4)
	var fds []*fileDigests
	for range 3 {
		f, _ := openDigestFile(t, 2*digestBlock)
		fi, _ := f.Stat()
		fds = append(fds, c.lookup(sysStat(fi)))
		require.LessOrEqual(t, c.blocks, 4, "cache holds %d blocks, bound 4", c.blocks)
	}
	assert.Len(t, c.files, 2, "cache holds %d files, want the 2 most recent", len(c.files))
	_, ok := c.files[fds[0].key]
	assert.False(t, ok, "the least recently read file was kept")
	big, _ := openDigestFile(t, 5*digestBlock)
	fi, _ := big.Stat()
	assert.Nil(t, c.lookup(sysStat(fi)), "a file larger than the whole cache was cached")
	small, _ := openDigestFile(t, digestBlock-1)
	fi, _ = small.Stat()
	assert.Nil(t, c.lookup(sysStat(fi)), "a file without a whole block was cached")
	assert.Nil(t, newDigestCache(-1).lookup(sysStat(fi)), "a cache turned off returned an entry")
}

// The server's own sum of bytes it lacks in the cache reads them through a
// pool buffer, piece by piece, and a file that ends early is an error.
func TestPreadCRC(t *testing.T) {
	f, data := openDigestFile(t, 3*crcPiece+5)
	sc := &serverConn{s: &Server{pool: newBufPool(1, 1<<20)}, connBufs: make(chan struct{}, 1), ctx: context.Background()}
	for _, r := range []struct{ off, n int64 }{{0, int64(len(data))}, {1, 3 * crcPiece}, {crcPiece - 1, 2}, {5, 0}} {
		got, err := sc.preadCRC(f, 0, r.off, r.n)
		if assert.NoError(t, err, "preadCRC [%d, +%d) = %08x, %v; want %08x", r.off, r.n, got, err, crc32c(0, data[r.off:r.off+r.n])) {
			assert.Equal(t, crc32c(0, data[r.off:r.off+r.n]), got, "preadCRC [%d, +%d) = %08x, %v; want %08x", r.off, r.n, got, err, crc32c(0, data[r.off:r.off+r.n]))
		}
	}
	n := sc.s.pool.inUse()
	require.Zero(t, n, "%d pool buffers and %d connection shares still held", n, len(sc.connBufs))
	require.Empty(t, sc.connBufs, "%d pool buffers and %d connection shares still held", n, len(sc.connBufs))
	require.NoError(t, os.Truncate(f.Name(), crcPiece))
	_, err := sc.preadCRC(f, 0, 0, int64(len(data)))
	require.Error(t, err, "CRC of a truncated file: err = %v, want one saying it shrank", err)
	require.ErrorContains(t, err, "shrank", "CRC of a truncated file: err = %v, want one saying it shrank", err)
}

// TestReadCRCAfterChange reads a file with CRCs (sendfile, digests cached),
// changes it and reads it again: the new bytes arrive with a CRC that
// matches. A cached CRC that no longer matches the file (a change the
// stamp missed) fails the read with ErrChecksum instead of passing it.
func TestReadCRCAfterChange(t *testing.T) {
	ts := startServer(t, serverConfig{}, nil)
	data := writeFile(t, ts.root, "f", 3*digestBlock+5, 1)
	cl := dialTest(t, ts, nil, WithCRC(true), WithChunkSize(2*digestBlock))
	ctx := context.Background()
	read := func() ([]byte, error) {
		f, err := cl.Open(ctx, "f")
		if err != nil {
			return nil, err
		}
		got := make([]byte, f.Size())
		_, err = f.ReadAt(got, 0)
		return got, err
	}
	for range 2 {
		got, err := read()
		require.NoError(t, err, "read: %v (equal %v)", err, bytes.Equal(got, data))
		require.True(t, bytes.Equal(got, data), "read: %v (equal %v)", err, bytes.Equal(got, data))
	}
	p := filepath.Join(ts.root, "f")
	st, _ := os.Stat(p)
	data = writeFile(t, ts.root, "f", 3*digestBlock+5, 2)
	require.NoError(t, os.Chtimes(p, time.Time{}, st.ModTime().Add(time.Second)))
	got, err := read()
	require.NoError(t, err, "read after the change: %v (equal %v)", err, bytes.Equal(got, data))
	require.True(t, bytes.Equal(got, data), "read after the change: %v (equal %v)", err, bytes.Equal(got, data))

	// A stale cached CRC, as a change the stamp missed would leave.
	fi, _ := os.Stat(p)
	fd := ts.srv.digests.lookup(sysStat(fi))
	c, _ := fd.get(1)
	fd.put(1, ^c)
	_, err = read()
	require.ErrorIs(t, err, ErrChecksum, "read with a stale cached CRC: err = %v, want ErrChecksum", err)
}
