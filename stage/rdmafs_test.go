package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

func remoteFS(t *testing.T, opts ...rdmafs.Option) *vfs.Mux {
	t.Helper()
	m, err := vfs.New(rdmafsfs.With(append(rdmafstest.Options(), opts...)...))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func TestStageFromRdmafsServer(t *testing.T) {
	export, dst := t.TempDir(), t.TempDir()
	for i := range 4 {
		writeFile(t, export, fmt.Sprintf("ckpt/shard-%02d.bin", i), 1<<20+i*1000, uint64(i))
	}
	remote := rdmafstest.Serve(t, export)
	m := remoteFS(t, rdmafs.WithTimeout(2*time.Second), rdmafs.WithRetryDeadline(300*time.Millisecond))

	pattern := remote + "/ckpt/shard-{00..03}.bin"
	opts := Options{FS: m, Workers: 4, ChunkSize: 256 << 10}
	res, err := stage(t, dst, opts, pattern)
	require.NoError(t, err)
	require.Equal(t, 4, res.Copied)
	for i := range 4 {
		name := fmt.Sprintf("shard-%02d.bin", i)
		require.Equal(t, fileSHA(t, filepath.Join(export, "ckpt", name)), fileSHA(t, filepath.Join(dst, name)), name)
	}

	// The remote modification time makes a rerun skip what is staged.
	res, err = stage(t, dst, opts, pattern)
	require.NoError(t, err)
	require.Zero(t, res.Copied)
	require.Equal(t, 4, res.Skipped)

	// A brace pattern expands to entries with the sizes and times the
	// server reports.
	es, err := Expand(context.Background(), []string{remote + "/ckpt/shard-{00..01}.bin"}, Options{FS: m})
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Equal(t, Entry{Source: remote + "/ckpt/shard-00.bin", Rel: "shard-00.bin", Size: 1 << 20, ModTime: es[0].ModTime}, es[0])
	require.False(t, es[0].ModTime.IsZero())
}

// A remote directory stages like a local one (its files directly into
// the destination, checked against its manifest), and so does a remote
// sharded checkpoint through its index.json (once refused).
func TestStageRemoteDirectoryAndIndex(t *testing.T) {
	export := t.TempDir()
	index, files := makeCheckpoint(t, export)
	writeFile(t, export, "data/a.bin", 5000, 1)
	writeFile(t, export, "data/sub/b.bin", 70000, 2)
	manifest := fmt.Sprintf(`{"format":"webdataset","version":1,"shards":[{"name":"a.bin","bytes":5000,"samples":1,"sha256":%q}]}`,
		fileSHA(t, filepath.Join(export, "data/a.bin")))
	require.NoError(t, os.WriteFile(filepath.Join(export, "data/index.json"), []byte(manifest), 0o644))
	remote := rdmafstest.Serve(t, export)
	m := remoteFS(t)

	dst := t.TempDir()
	res, err := stage(t, dst, Options{FS: m}, remote+"/"+filepath.Base(index))
	require.NoError(t, err)
	require.Equal(t, 4, res.Copied, "the index and its three shards")
	requireSame(t, export, dst, files...)
	require.NoFileExists(t, filepath.Join(dst, "stray.bin"))

	dst = t.TempDir()
	res, err = stage(t, dst, Options{FS: m}, remote+"/data/")
	require.NoError(t, err)
	require.Equal(t, 3, res.Copied, "a.bin, sub/b.bin and the manifest")
	requireSame(t, filepath.Join(export, "data"), dst, "a.bin", "sub/b.bin", "index.json")
	f := byName(res)["a.bin"]
	require.Equal(t, remote+"/data/index.json", f.Manifest, "checked against the remote manifest")

	// A remote shard whose size differs from its manifest is refused
	// before anything is copied.
	writeFile(t, export, "data/a.bin", 4999, 1)
	_, err = stage(t, t.TempDir(), Options{FS: m}, remote+"/data/")
	require.ErrorContains(t, err, "4999 bytes, the manifest lists 5000")
}

// A server that went away is an error naming the file; nothing partial
// stays.
func TestStageServerGone(t *testing.T) {
	export := t.TempDir()
	writeFile(t, export, "ckpt/shard-99.bin", 3<<20, 9)
	m := remoteFS(t, rdmafs.WithTimeout(2*time.Second), rdmafs.WithRetryDeadline(300*time.Millisecond))
	remote, stop := rdmafstest.Start(t, export)
	entries, err := Expand(context.Background(), []string{remote + "/ckpt/shard-99.bin"}, Options{FS: m})
	require.NoError(t, err)
	stop()
	dst := t.TempDir()
	_, err = stageEntries(t, dst, Options{FS: m, Workers: 2}, entries)
	require.Error(t, err)
	require.ErrorContains(t, err, "shard-99.bin")
	requireClean(t, dst)
}
