package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTarShard writes a WebDataset shard of n samples.
func writeTarShard(t *testing.T, path string, n int) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, 100+i)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: filepath.Base(path) + "-" + string(rune('a'+i)) + ".txt", Mode: 0o644, Size: int64(len(body))}))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// A load of shards that a manifest lists checks their size and SHA-256
// against it and names the bad one.
func TestLoadVerifiesAgainstManifest(t *testing.T) {
	dir := t.TempDir()
	writeTarShard(t, filepath.Join(dir, "shard-0.tar"), 3)
	writeTarShard(t, filepath.Join(dir, "shard-1.tar"), 5)
	_, stderr, code := run(t, "manifest", dir)
	require.Equal(t, 0, code, stderr)

	out, stderr, code := run(t, "load", "--json", filepath.Join(dir, "shard-0.tar"), filepath.Join(dir, "shard-1.tar"))
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 2)
	require.NotEmpty(t, res.Files[0].SHA256, "the manifest turned the SHA-256 on")

	// Same size, one byte changed: the digest disagrees.
	bad := filepath.Join(dir, "shard-1.tar")
	b, err := os.ReadFile(bad)
	require.NoError(t, err)
	b[600] ^= 1
	require.NoError(t, os.WriteFile(bad, b, 0o644))
	_, stderr, code = run(t, "load", bad)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "shard-1.tar")
	require.Contains(t, stderr, "manifest lists")

	// Another size: refused before reading.
	require.NoError(t, os.WriteFile(bad, b[:1024], 0o644))
	_, stderr, code = run(t, "load", bad)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "1024 bytes, the manifest lists")

	// --verify=false loads it as it is.
	_, stderr, code = run(t, "load", "--verify=false", bad)
	require.Equal(t, 0, code, stderr)

	// A broken manifest is an error, not a silent skip.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.json"), []byte("{"), 0o644))
	_, stderr, code = run(t, "load", filepath.Join(dir, "shard-0.tar"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "--verify=false")
}
