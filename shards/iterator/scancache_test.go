package iterator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/shards/webdataset"
)

// TestScanCache opens a directory without a manifest with a scan cache:
// the second Open reads no shard and finds the same dataset; a shard
// rewritten since, other scan options, and a damaged cache file each cost
// a scan again (of that shard, or of all); a cache that cannot be written
// costs nothing but the scans.
func TestScanCache(t *testing.T) {
	ctx := context.Background()
	dir := makeShards(t, []int{3, 5, 4}).Root // shard-02 is zstd-compressed
	cache := filepath.Join(t.TempDir(), "scan")
	open := func(opts ...OpenOption) (*Dataset, int64) {
		t.Helper()
		before := shardsScanned.Load()
		ds, err := Open(ctx, dir, append([]OpenOption{WithScanCache(cache)}, opts...)...)
		require.NoError(t, err)
		return ds, shardsScanned.Load() - before
	}
	first, scans := open()
	require.EqualValues(t, 3, scans, "first open")
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 3, "one cache file per shard")

	again, scans := open()
	require.Zero(t, scans, "second open, nothing changed")
	require.Equal(t, first.Shards, again.Shards)
	require.Equal(t, first.Fingerprint(), again.Fingerprint())

	// A rewritten shard (one sample fewer) is scanned again, alone.
	other := makeShards(t, []int{1, 1, 3}).Root
	data, err := os.ReadFile(filepath.Join(other, "shard-02.tar.zst"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shard-02.tar.zst"), data, 0o644))
	changed, scans := open()
	require.EqualValues(t, 1, scans, "after shard-02 changed")
	require.EqualValues(t, 3, changed.Shards[2].Samples)
	require.Equal(t, first.Shards[:2], changed.Shards[:2])

	// Other caps: another fingerprint, every shard scanned again.
	_, scans = open(WithReaderOptions(webdataset.WithMaxMemberBytes(1 << 20)))
	require.EqualValues(t, 3, scans, "other scan options")

	// A damaged cache file is a miss, and is written again.
	entries, err = os.ReadDir(cache)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.WriteFile(filepath.Join(cache, e.Name()), []byte("{not json"), 0o600))
	}
	_, scans = open()
	require.EqualValues(t, 3, scans, "damaged cache files")
	_, scans = open()
	require.Zero(t, scans, "cache written again")

	// A cache path that is a file: Open works, scanning every time.
	blocked := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocked, nil, 0o600))
	for range 2 {
		before := shardsScanned.Load()
		_, err := Open(ctx, dir, WithScanCache(blocked))
		require.NoError(t, err)
		require.EqualValues(t, 3, shardsScanned.Load()-before, "unwritable cache")
	}
}

// TestDefaultScanCacheDir checks GDSLOAD_SCAN_CACHE: a directory, or off.
func TestDefaultScanCacheDir(t *testing.T) {
	t.Setenv(ScanCacheEnv, "/some/dir")
	require.Equal(t, "/some/dir", DefaultScanCacheDir())
	t.Setenv(ScanCacheEnv, "off")
	require.Empty(t, DefaultScanCacheDir())
	t.Setenv(ScanCacheEnv, "")
	os.Unsetenv(ScanCacheEnv)
	if d, err := os.UserCacheDir(); err == nil {
		require.Equal(t, filepath.Join(d, "gdsload", "scan"), DefaultScanCacheDir())
	}
}

// FuzzScanCacheFile puts arbitrary bytes in a shard's cache file, first
// as they are, then under the right key: get must not fail, and what it
// takes from the cache must be plausible for the shard.
func FuzzScanCacheFile(f *testing.F) {
	dir := f.TempDir()
	shard := filepath.Join(dir, "s.tar")
	require.NoError(f, os.WriteFile(shard, make([]byte, 2048), 0o644))
	fi, err := os.Stat(shard)
	require.NoError(f, err)
	c := &scanCache{dir: filepath.Join(dir, "cache"), fingerprint: "fp"}
	slot, ok := c.slot(shard, fi)
	require.True(f, ok)
	good, err := json.Marshal(cachedScan{Key: slot.key, Entry: webdataset.ShardEntry{Name: "s.tar", Bytes: 2048, Samples: 3}})
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"key":"x","entry":{"name":"s.tar","bytes":2048,"samples":-1}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		require.NoError(t, os.MkdirAll(c.dir, 0o700))
		var doc map[string]any
		if json.Unmarshal(b, &doc) == nil && doc != nil {
			doc["key"] = slot.key // also under the right key
			if k, err := json.Marshal(doc); err == nil {
				b = k
			}
		}
		require.NoError(t, os.WriteFile(slot.file, b, 0o600))
		e, ok := c.get(slot, shard, fi)
		if ok {
			require.True(t, plausible(e, shard, fi), "%+v", e)
		}
	})
}
