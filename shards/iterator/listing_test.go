package iterator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// ShardFilesAt finds through a Mux what webdataset.ShardFiles finds on a
// local disk: shards in subfolders included, dot-folders and other files
// left out, and a shard compressed in a way that is not read refused by
// name.
func TestShardFilesAt(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"a/shard-000000.tar", "b/shard-000001.tar", "shard-000004.tar.zst", ".cache/shard-000009.tar", "notes.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	m, err := vfs.New()
	require.NoError(t, err)
	defer m.Close()
	got, err := ShardFilesAt(context.Background(), m, dir)
	require.NoError(t, err)
	require.Equal(t, []string{"a/shard-000000.tar", "b/shard-000001.tar", "shard-000004.tar.zst"}, got)
	local, _, err := webdataset.ShardFiles(dir)
	require.NoError(t, err)
	require.Equal(t, local, got)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "shard-000002.tar.xz"), []byte("x"), 0o644))
	_, err = ShardFilesAt(context.Background(), m, dir)
	require.ErrorIs(t, err, webdataset.ErrUnreadShards)
	require.ErrorContains(t, err, "b/shard-000002.tar.xz")
}
