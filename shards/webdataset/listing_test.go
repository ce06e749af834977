package webdataset

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bzip2Shard is a bzip2-compressed shard of samples s0, s1 and s2, each a
// .txt ("sample N text") and a .cls ("N"), made with GNU tar and bzip2.
const bzip2Shard = "testdata/shard-bzip2.tar.bz2"

// plainShard is a tar of n samples keyed prefix-00, prefix-01, ...
func plainShard(t *testing.T, prefix string, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		data := fmt.Appendf(nil, "%s %d", prefix, i)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%s-%02d.txt", prefix, i), Mode: 0o644, Size: int64(len(data))}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func writeAt(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// A folder whose shards lie in subfolders is listed whole, as load lists
// it; folders beginning with a dot are left out; bzip2 shards are listed.
func TestShardFilesRecurse(t *testing.T) {
	dir := t.TempDir()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	bz, err := os.ReadFile(bzip2Shard)
	require.NoError(t, err)
	writeAt(t, dir, "a/shard-000000.tar", plainShard(t, "a", 5))
	writeAt(t, dir, "b/shard-000001.tar", plainShard(t, "b", 4))
	writeAt(t, dir, "shard-000004.tar.zst", enc.EncodeAll(plainShard(t, "c", 3), nil))
	writeAt(t, dir, "shard-000005.tar.bz2", bz)
	writeAt(t, dir, ".gdsload-stage/shard-000009.tar", plainShard(t, "x", 1))
	writeAt(t, dir, "notes.txt", []byte("not a shard"))
	want := []string{"a/shard-000000.tar", "b/shard-000001.tar", "shard-000004.tar.zst", "shard-000005.tar.bz2"}

	names, total, err := ShardFiles(dir)
	require.NoError(t, err)
	assert.Equal(t, want, names)
	assert.Positive(t, total)

	m, err := BuildManifest(context.Background(), dir)
	require.NoError(t, err)
	require.Len(t, m.Shards, 4)
	assert.Equal(t, int64(5+4+3+3), m.Samples())
	require.NoError(t, m.Validate())

	// A listing made elsewhere (a remote walk) selects the same shards.
	rels := []string{".gdsload-stage/shard-000009.tar", "a/shard-000000.tar", "b/shard-000001.tar", "notes.txt", "shard-000004.tar.zst", "shard-000005.tar.bz2"}
	at, err := SelectShards(dir, rels)
	require.NoError(t, err)
	assert.Equal(t, want, at)
}

// Shards compressed in a way that is not read are refused by name, not
// left out without a word.
func TestShardFilesRefuseUnread(t *testing.T) {
	for _, name := range []string{"shard-000002.tar.xz", "sub/shard-000003.txz", "shard.tar.lz4"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeAt(t, dir, "shard-000000.tar", plainShard(t, "a", 2))
			writeAt(t, dir, name, []byte("\xfd7zXZ\x00 not read"))
			_, _, err := ShardFiles(dir)
			require.ErrorIs(t, err, ErrUnreadShards)
			assert.ErrorContains(t, err, name)
			_, err = BuildManifest(context.Background(), dir)
			require.ErrorIs(t, err, ErrUnreadShards)
			_, err = SelectShards(dir, []string{"shard-000000.tar", name})
			require.ErrorIs(t, err, ErrUnreadShards)
			assert.Contains(t, err.Error(), name)
		})
	}
}

// A bzip2 shard reads as its tar does, streamed, in memory and by Auto
// detection, and the decompressed-size cap holds for it.
func TestBzip2Shard(t *testing.T) {
	bz, err := os.ReadFile(bzip2Shard)
	require.NoError(t, err)
	assert.Equal(t, Bzip2, DetectCompression("x", bz))
	assert.Equal(t, Bzip2, CompressionFromName("a.tar.bz2"))
	assert.True(t, IsShardName("a.tar.bz2"))
	check := func(t *testing.T, ss []Sample) {
		t.Helper()
		require.Len(t, ss, 3)
		for i, s := range ss {
			assert.Equal(t, fmt.Sprintf("s%d", i), s.Key)
			txt, ok := s.Get("txt")
			require.True(t, ok)
			assert.Equal(t, fmt.Sprintf("sample %d text", i), string(txt))
		}
	}
	for _, c := range []Compression{Bzip2, Auto} {
		ss, err := readAll(bytes.NewReader(bz), c)
		require.NoError(t, err)
		check(t, ss)
	}
	d, err := NewDecompressor(1<<20, 0)
	require.NoError(t, err)
	defer d.Close()
	tarData, err := d.Decompress(nil, bz, Auto, "shard-bzip2.tar.bz2")
	require.NoError(t, err)
	ss, err := readAll(bytes.NewReader(tarData), None)
	require.NoError(t, err)
	check(t, ss)

	small, err := NewDecompressor(4096, 0) // the tar is 10 KiB
	require.NoError(t, err)
	defer small.Close()
	_, err = small.Decompress(nil, bz, Bzip2, "shard-bzip2.tar.bz2")
	require.ErrorIs(t, err, ErrShardTooLarge)

	e, err := ScanShard(context.Background(), bzip2Shard)
	require.NoError(t, err)
	assert.EqualValues(t, 3, e.Samples)
	_, err = d.Decompress(nil, bz[:len(bz)-10], Bzip2, "cut.tar.bz2")
	require.Error(t, err, "a cut bzip2 stream")
}

func TestCheckListed(t *testing.T) {
	dir := t.TempDir()
	writeAt(t, dir, "shard-000000.tar", plainShard(t, "a", 2))
	writeAt(t, dir, "sub/shard-000001.tar", plainShard(t, "b", 2))
	m, err := BuildManifest(context.Background(), dir)
	require.NoError(t, err)
	names, _, err := ShardFiles(dir)
	require.NoError(t, err)
	require.NoError(t, CheckListed(dir, names, m))

	writeAt(t, dir, "sub/shard-000002.tar", plainShard(t, "c", 2))
	names, _, err = ShardFiles(dir)
	require.NoError(t, err)
	err = CheckListed(dir, names, m)
	require.ErrorIs(t, err, ErrUnlisted)
	assert.ErrorContains(t, err, "shards the manifest does not list (1): sub/shard-000002.tar")
}
