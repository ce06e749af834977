package s3fs_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/miniotest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/objstore"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/s3fs"
)

// TestS3ThroughMux: s3:// URLs through a Mux, against a real MinIO: a
// prefix is a directory (Stat, List, Walk in one listing, OpenAll loads
// every object byte-exact), a key with bytes a URL escapes round-trips
// through Name, a missing key or bucket matches fs.ErrNotExist, ReadFile
// reads a manifest, and With refuses a bad option up front.
func TestS3ThroughMux(t *testing.T) {
	mc := miniotest.StartForTest(t, 1)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "data"))
	objects := map[string][]byte{
		"set/a.bin": bytes.Repeat([]byte("a"), 5000), "set/sub/b.bin": bytes.Repeat([]byte("b"), 70000),
		"set/index.json": []byte(`{"shards":[]}`), "set/odd #1%.bin": []byte("odd"), "other": []byte("x"),
	}
	for k, v := range objects {
		_, err := mc.Put(ctx, "data", k, v)
		require.NoError(t, err)
	}
	m, err := vfs.New(s3fs.With(mc.Options()...))
	require.NoError(t, err)
	defer m.Close()

	fi, err := m.Stat(ctx, "s3://data/set/")
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	fi, err = m.Stat(ctx, "s3://data/set/a.bin")
	require.NoError(t, err)
	require.Equal(t, int64(5000), fi.Size())

	ents, err := m.List(ctx, "s3://data/set")
	require.NoError(t, err)
	var listed []string
	for _, e := range ents {
		listed = append(listed, e.URL)
	}
	require.Equal(t, []string{"s3://data/set/a.bin", "s3://data/set/index.json", "s3://data/set/odd%20%231%25.bin", "s3://data/set/sub"}, listed)

	ents, err = m.Walk(ctx, "s3://data/set/")
	require.NoError(t, err)
	var rels []string
	for _, e := range ents {
		rels = append(rels, e.Rel)
	}
	require.Equal(t, []string{"a.bin", "index.json", "odd #1%.bin", "sub/b.bin"}, rels)

	files, err := m.OpenAll(ctx, []string{"s3://data/set/"})
	require.NoError(t, err)
	defer files.Close()
	for i, f := range files {
		require.Equal(t, ents[i].URL, f.Name())
		b, k, err := objstore.ParseURL(f.Name())
		require.NoError(t, err)
		require.Equal(t, "data", b)
		buf := make([]byte, f.Size())
		_, err = loader.Load(ctx, []loader.Job{loader.WholeFile(f, loader.NewHostBuffer(buf))}, loader.Options{})
		require.NoError(t, err)
		require.Equal(t, objects[k], buf, k)
		require.Contains(t, f.Identity(), "etag ")
	}

	b, err := m.ReadFile(ctx, "s3://data/set/index.json", 1<<20)
	require.NoError(t, err)
	require.Equal(t, objects["set/index.json"], b)

	for _, u := range []string{"s3://data/set/missing.bin", "s3://data/nope/", "s3://no-such-bucket/x"} {
		_, err := m.Open(ctx, u)
		require.Truef(t, errors.Is(err, fs.ErrNotExist), "Open(%s): %v", u, err)
		_, err = m.Walk(ctx, u)
		require.Truef(t, errors.Is(err, fs.ErrNotExist), "Walk(%s): %v", u, err)
	}

	_, err = vfs.New(s3fs.With(objstore.WithConcurrency(0)))
	require.ErrorContains(t, err, "concurrency")
}
