package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarOf is a shard of n samples keyed prefix-00, prefix-01, ...
func tarOf(t *testing.T, prefix string, n int) []byte {
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

// manifest sees the shards in subfolders that load and iterate see, and
// refuses by name a shard it cannot read instead of leaving it out.
func TestManifestSubfoldersAndUnread(t *testing.T) {
	dir := t.TempDir()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	for rel, data := range map[string][]byte{
		"a/shard-000000.tar":   tarOf(t, "a", 500),
		"b/shard-000001.tar":   tarOf(t, "b", 400),
		"shard-000004.tar.zst": enc.EncodeAll(tarOf(t, "c", 500), nil),
	} {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	_, stderr, code := run(t, "manifest", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "3 shards, 1400 samples")

	out, stderr, code := run(t, "iterate", "--json", "--shuffle=false", dir)
	require.Equal(t, exitOK, code, stderr)
	keys, _ := parseLines(t, out)
	assert.Equal(t, 1400, len(keys))

	require.NoError(t, os.Remove(filepath.Join(dir, "index.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shard-000005.tar.xz"), []byte("\xfd7zXZ\x00"), 0o644))
	_, stderr, code = run(t, "manifest", dir)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "shard-000005.tar.xz (xz)")
	assert.NoFileExists(t, filepath.Join(dir, "index.json"))
}

// manifest --verify names the shards in the folder that the manifest
// does not list, beside those that differ.
func TestManifestVerifyReportsUnlisted(t *testing.T) {
	dir := writeShards(t, 3, 4)
	_, stderr, code := run(t, "manifest", dir)
	require.Equal(t, exitOK, code, stderr)
	_, stderr, code = run(t, "manifest", "--verify", dir)
	require.Equal(t, exitOK, code, stderr)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "shard-9.tar"), tarOf(t, "x", 2), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "more"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "more", "shard-10.tar"), tarOf(t, "y", 2), 0o644))
	_, stderr, code = run(t, "manifest", "--verify", dir)
	assert.Equal(t, exitError, code, stderr)
	assert.Contains(t, stderr, "shards the manifest does not list (2): more/shard-10.tar, shard-9.tar")
	assert.Contains(t, stderr, "gdsload manifest DIR")

	// With a listed shard damaged too, both are said.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shard-0.tar"), tarOf(t, "z", 3), 0o644))
	_, stderr, code = run(t, "manifest", "--verify", dir)
	assert.Equal(t, exitError, code, stderr)
	assert.Contains(t, stderr, "shard-0.tar")
	assert.Contains(t, stderr, "the manifest does not list")
}
