package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

func TestServeDownloadsOnceThenHits(t *testing.T) {
	c, err := Open(t.TempDir(), WithLimit(1<<20))
	require.NoError(t, err)
	var reads atomic.Int64
	data := content("a", 1, 100_000)
	for range 3 {
		require.Equal(t, data, serveBytes(t, c, newMemFile("s3://b/a", data, &reads)))
	}
	assert.Equal(t, int64(len(data)), reads.Load(), "the store is read once")
	s := c.Stats()
	assert.Equal(t, int64(1), s.Misses)
	assert.Equal(t, int64(2), s.Hits)
	assert.Equal(t, int64(len(data)), s.BytesDownloaded)
	assert.Equal(t, int64(3*len(data)), s.BytesServed)
}

func TestServedFileKeepsRemoteNameAndIdentity(t *testing.T) {
	c, err := Open(t.TempDir(), WithLimit(1<<20))
	require.NoError(t, err)
	remote := newMemFile("s3://b/k", content("k", 1, 5000), nil)
	f, err := c.Serve(context.Background(), remote)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, "s3://b/k", f.Name())
	assert.Equal(t, remote.Identity(), f.Identity())
	assert.True(t, remote.ModTime().Equal(f.ModTime()), "mtime %v, want %v", f.ModTime(), remote.ModTime())
	_, isFD := f.(loader.FileDescriptorSource)
	assert.True(t, isFD, "a copy is a local file the loader can read with O_DIRECT or cuFile")
}

func TestReplacedFileIsFetchedAgain(t *testing.T) {
	c, err := Open(t.TempDir(), WithLimit(1<<20))
	require.NoError(t, err)
	var reads atomic.Int64
	v1, v2 := content("x", 1, 4096), content("x", 2, 4096)
	require.Equal(t, v1, serveBytes(t, c, newMemFile("s3://b/x", v1, &reads)))
	require.Equal(t, v2, serveBytes(t, c, newMemFile("s3://b/x", v2, &reads)), "a new ETag is a new entry")
	require.Equal(t, v2, serveBytes(t, c, newMemFile("s3://b/x", v2, &reads)))
	assert.Equal(t, int64(2*4096), reads.Load())
}

func TestDamagedCopyIsFetchedAgainOnHit(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, WithLimit(1<<20))
	require.NoError(t, err)
	var reads atomic.Int64
	data := content("d", 1, 10_000)
	require.Equal(t, data, serveBytes(t, c, newMemFile("s3://b/d", data, &reads)))
	flipByte(t, dataFiles(t, dir)[0], 1234)

	require.Equal(t, data, serveBytes(t, c, newMemFile("s3://b/d", data, &reads)), "the damaged copy is not served")
	assert.Equal(t, int64(2*len(data)), reads.Load())
	assert.Equal(t, int64(1), c.Stats().Refetched)
}

func TestVerifyFindsAndRemovesDamagedCopy(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, WithLimit(1<<20), WithVerifyHits(false))
	require.NoError(t, err)
	for i := range 3 {
		name := fmt.Sprintf("s3://b/%d", i)
		serveBytes(t, c, newMemFile(name, content(name, 1, 3000), nil))
	}
	checked, bad, err := c.Verify(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, checked)
	assert.Empty(t, bad)

	ents, err := c.Entries()
	require.NoError(t, err)
	flipByte(t, c.dataPath(ents[1].key), 7)
	checked, bad, err = c.Verify(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, checked)
	require.Len(t, bad, 1)
	assert.Equal(t, ents[1].URL, bad[0].URL)
	assert.True(t, bad[0].Removed)
	ents, err = c.Entries()
	require.NoError(t, err)
	assert.Len(t, ents, 2)
}

func TestDownloadDamagedInTransitIsRefused(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, WithLimit(1<<20))
	require.NoError(t, err)
	f := newMemFile("s3://b/t", content("t", 1, 2048), nil)
	f.data = content("t", 2, 2048) // bytes that are not what the ETag says
	_, err = c.Serve(context.Background(), f)
	require.ErrorContains(t, err, "MD5")
	assert.Empty(t, dataFiles(t, dir))
	assert.Empty(t, tmpFiles(t, dir))
}

func TestLimitHoldsAndLeastRecentlyUsedGoesFirst(t *testing.T) {
	dir := t.TempDir()
	const size = 10_000
	c, err := Open(dir, WithLimit(3*size))
	require.NoError(t, err)
	var reads atomic.Int64
	file := func(i int) *memFile {
		name := fmt.Sprintf("s3://b/shard-%02d", i)
		return newMemFile(name, content(name, 1, size), &reads)
	}
	for epoch := range 2 {
		for i := range 10 {
			require.Equal(t, file(i).data, serveBytes(t, c, file(i)), "epoch %d shard %d", epoch, i)
			require.LessOrEqual(t, held(t, c), int64(3*size))
		}
	}
	assert.Equal(t, int64(20*size), reads.Load(), "3 of 10 shards fit: each epoch reads all")
	assert.Equal(t, int64(17), c.Stats().Evictions)

	// Shards 7, 8, 9 are cached; using 7 makes 8 the least recently used.
	serveBytes(t, c, file(7))
	serveBytes(t, c, file(0))
	before := reads.Load()
	serveBytes(t, c, file(7))
	serveBytes(t, c, file(9))
	assert.Equal(t, before, reads.Load(), "7 and 9 stayed; 8 was evicted")
}

func TestEntryInUseIsNeverEvicted(t *testing.T) {
	dir := t.TempDir()
	const size = 10_000
	c, err := Open(dir, WithLimit(2*size))
	require.NoError(t, err)
	var reads atomic.Int64
	file := func(i int) *memFile {
		name := fmt.Sprintf("s3://b/%d", i)
		return newMemFile(name, content(name, 1, size), &reads)
	}
	open := make([]interface{ Close() error }, 0, 2)
	for i := range 2 {
		f, err := c.Serve(context.Background(), file(i))
		require.NoError(t, err)
		open = append(open, f)
	}
	third, err := c.Serve(context.Background(), file(2))
	require.NoError(t, err)
	assert.Equal(t, file(2).data, readAll(t, third))
	assert.IsType(t, &memFile{}, third, "no room: read from the store uncached")
	assert.Equal(t, int64(1), c.Stats().Bypassed)
	assert.Len(t, dataFiles(t, dir), 2)
	for _, f := range open {
		require.NoError(t, f.Close())
	}
	// Released, the two can be evicted.
	require.Equal(t, file(2).data, serveBytes(t, c, file(2)))
	assert.Equal(t, int64(1), c.Stats().Evictions)
}

func TestFileLargerThanLimitIsAnError(t *testing.T) {
	c, err := Open(t.TempDir(), WithLimit(1000))
	require.NoError(t, err)
	_, err = c.Serve(context.Background(), newMemFile("s3://b/big", content("big", 1, 1001), nil))
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, "s3://b/big")
}

func TestOptionsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Option
	}{{"zero limit", WithLimit(0)}, {"negative limit", WithLimit(-1)}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.TempDir(), tc.opt)
			require.Error(t, err)
		})
	}
	_, err := Open("")
	require.Error(t, err)
}

func TestDefaultLimitIsAFractionOfFreeSpace(t *testing.T) {
	c, err := Open(t.TempDir())
	require.NoError(t, err)
	assert.Positive(t, c.Limit())
}

func TestPruneAndClearKeepEntriesInUse(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, WithLimit(1<<20))
	require.NoError(t, err)
	for i := range 4 {
		name := fmt.Sprintf("s3://b/%d", i)
		serveBytes(t, c, newMemFile(name, content(name, 1, 1000), nil))
	}
	res, err := c.Prune(context.Background(), 2500)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Evicted)
	assert.Equal(t, int64(2000), res.Held)

	f, err := c.Serve(context.Background(), newMemFile("s3://b/3", content("s3://b/3", 1, 1000), nil))
	require.NoError(t, err)
	res, err = c.Clear(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Evicted)
	assert.Equal(t, 1, res.InUse)
	require.NoError(t, f.Close())
	res, err = c.Clear(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.Evicted)
	assert.Empty(t, dataFiles(t, dir))
	locks, err := os.ReadDir(filepath.Join(dir, "locks"))
	require.NoError(t, err)
	assert.Empty(t, locks, "no lock file outlives its entry after Clear")
}

func TestCloseRecordsTotals(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		c, err := Open(dir, WithLimit(1<<20))
		require.NoError(t, err)
		serveBytes(t, c, newMemFile("s3://b/a", content("a", 1, 100), nil))
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "a second Close adds nothing")
	}
	c, err := Open(dir, WithLimit(1<<20))
	require.NoError(t, err)
	tot, err := c.Totals()
	require.NoError(t, err)
	assert.Equal(t, Totals{Hits: 1, Misses: 1, BytesDownloaded: 100, BytesServed: 200}, tot)
	assert.InDelta(t, 0.5, tot.HitRate(), 1e-9)
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	b[0] ^= 0x40
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
}

func TestExpectedSHA256(t *testing.T) {
	data := content("m", 1, 5000)
	other := content("m", 2, 5000)
	tests := []struct {
		name     string
		cached   bool   // a copy is in the folder before the open
		want     []byte // the bytes whose SHA-256 the open expects
		err      error
		verified string
	}{
		{name: "download matches", want: data, verified: "sha256"},
		{name: "download differs", want: other, err: ErrMismatch},
		{name: "hit matches", cached: true, want: data, verified: "etag-md5"},
		{name: "hit differs: refetched, still differs", cached: true, want: other, err: ErrMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := Open(dir, WithLimit(1<<20))
			require.NoError(t, err)
			var reads atomic.Int64
			if tc.cached {
				serveBytes(t, c, newMemFile("s3://b/m", data, &reads))
			}
			ctx := vfs.ExpectSHA256(context.Background(), sumOf(tc.want))
			f, err := c.Serve(ctx, newMemFile("s3://b/m", data, &reads))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Empty(t, dataFiles(t, dir), "nothing that differs stays cached")
				return
			}
			require.NoError(t, err)
			defer f.Close()
			assert.Equal(t, data, readAll(t, f))
			ents, err := c.Entries()
			require.NoError(t, err)
			require.Len(t, ents, 1)
			assert.Equal(t, tc.verified, ents[0].Verified)
			assert.Equal(t, int64(len(data)), reads.Load())
		})
	}
}

// Readers in parallel over more files than fit: the folder, measured under
// its lock after every step of every reader, never holds more than the
// limit, and every reader reads the right bytes.
func TestLimitHoldsUnderConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	const size, files = 8000, 10
	c, err := Open(dir, WithLimit(3*size))
	require.NoError(t, err)
	var peak atomic.Int64
	measure := func() {
		g, err := lock(context.Background(), c.globalLock(), syscall.LOCK_EX, new(atomic.Int64))
		require.NoError(t, err)
		n := held(t, c)
		g.unlock()
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
	}
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			// Each reader has its own Cache, as each process of a node would.
			rc, err := Open(dir, WithLimit(3*size))
			require.NoError(t, err)
			for e := range 2 * files {
				i := (e + r) % files
				name := fmt.Sprintf("s3://b/%d", i)
				assert.Equal(t, content(name, 1, size), serveBytes(t, rc, newMemFile(name, content(name, 1, size), nil)))
				measure()
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, peak.Load(), int64(3*size))
	assert.Positive(t, peak.Load())
}
