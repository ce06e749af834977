package objstore_test

import (
	"context"
	"io/fs"
	"slices"
	"testing"

	"github.com/gdsload/gdsload/objstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBucketAsFileSystem: a bucket seen as a directory tree: prefixes are
// directories (a console's zero-byte "dir/" marker too), Stat tells objects
// from directories, List lists one level sorted, WalkFiles every object
// below a directory in one listing, and OpenInfo opens what a listing
// described without a HEAD.
func TestBucketAsFileSystem(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	files := map[string]string{
		"ckpt/model.safetensors": "weights", "ckpt/index.json": "{}", "ckpt/sub/a": "A", "ckpt/sub/b": "BB",
		"emptydir/": "", "top": "top!", "ckpt2x": "x",
	}
	for k, v := range files {
		put(t, mc, b, k, []byte(v))
	}
	px := newHTTPProxy(t, mc.Endpoint())
	bk := client(t, px.url()).Bucket(b)
	ctx := context.Background()

	stats := []struct {
		name string
		dir  bool
		size int64
		base string
		err  error
	}{
		{"", true, 0, b, nil},
		{"ckpt", true, 0, "ckpt", nil},
		{"ckpt/", true, 0, "ckpt", nil},
		{"ckpt/sub", true, 0, "sub", nil},
		{"ckpt/index.json", false, 2, "index.json", nil},
		{"emptydir", true, 0, "emptydir", nil},
		{"top", false, 4, "top", nil},
		{"nope", false, 0, "", fs.ErrNotExist},
		{"ckpt/sub/a/x", false, 0, "", fs.ErrNotExist},
		{"ck", false, 0, "", fs.ErrNotExist},
	}
	for _, c := range stats {
		fi, err := bk.Stat(ctx, c.name)
		if c.err != nil {
			assert.ErrorIs(t, err, c.err, "Stat(%q) = %v, %v; want %v", c.name, fi, err, c.err)
			continue
		}
		if assert.NoError(t, err, "Stat(%q) = %v, %v; want dir=%v size=%d name=%q", c.name, fi, err, c.dir, c.size, c.base) {
			if assert.Equal(t, c.dir, fi.IsDir(), "Stat(%q) = %v, %v; want dir=%v size=%d name=%q", c.name, fi, err, c.dir, c.size, c.base) {
				if assert.Equal(t, c.size, fi.Size(), "Stat(%q) = %v, %v; want dir=%v size=%d name=%q", c.name, fi, err, c.dir, c.size, c.base) {
					assert.Equal(t, c.base, fi.Name(), "Stat(%q) = %v, %v; want dir=%v size=%d name=%q", c.name, fi, err, c.dir, c.size, c.base)
				}
			}
		}
	}

	lists := []struct {
		name string
		want []string // directories end with '/'
		err  error
	}{
		{"", []string{"ckpt/", "ckpt2x", "emptydir/", "top"}, nil},
		{"ckpt", []string{"index.json", "model.safetensors", "sub/"}, nil},
		{"ckpt/sub/", []string{"a", "b"}, nil},
		{"emptydir", nil, nil},
		{"top", nil, fs.ErrNotExist},
		{"nope", nil, fs.ErrNotExist},
	}
	for _, c := range lists {
		fis, err := bk.List(ctx, c.name)
		if !assert.ErrorIs(t, err, c.err, "List(%q): %v, want %v", c.name, err, c.err) || !assert.False(t, c.err == nil && err != nil, "List(%q): %v, want %v", c.name, err, c.err) {
			continue
		}
		var got []string
		for _, fi := range fis {
			n := fi.Name()
			if fi.IsDir() {
				n += "/"
			}
			got = append(got, n)
		}
		assert.True(t, slices.Equal(got, c.want), "List(%q) = %q, want %q", c.name, got, c.want)
	}

	// A listing and a HEAD give an object the same time (a listing has
	// milliseconds, a HEAD whole seconds).
	ckpt, err := bk.List(ctx, "ckpt")
	require.NoError(t, err)
	head, err := bk.Stat(ctx, "ckpt/index.json")
	require.NoError(t, err, "Stat")
	require.True(t, head.ModTime().Equal(ckpt[0].ModTime()), "Stat gives %v, List %v", head.ModTime(), ckpt[0].ModTime())
	require.False(t, head.ModTime().IsZero(), "Stat gives %v, List %v", head.ModTime(), ckpt[0].ModTime())

	var walked []string
	err = bk.WalkFiles(ctx, "ckpt", func(rel string, fi fs.FileInfo) error {
		walked = append(walked, rel)
		return nil
	})
	want := []string{"index.json", "model.safetensors", "sub/a", "sub/b"}
	require.NoError(t, err, "WalkFiles(ckpt) = %q, %v; want %q", walked, err, want)
	require.True(t, slices.Equal(walked, want), "WalkFiles(ckpt) = %q, %v; want %q", walked, err, want)
	require.ErrorIs(t, bk.WalkFiles(ctx, "nope", func(string, fs.FileInfo) error { return nil }), fs.ErrNotExist, "WalkFiles(nope)")

	fis, err := bk.List(ctx, "ckpt/sub")
	require.NoError(t, err)
	heads := px.heads.Load()
	for _, fi := range fis {
		o, err := bk.OpenInfo(ctx, "ckpt/sub/"+fi.Name(), fi)
		require.NoError(t, err)
		got, err := readAll(ctx, o)
		want := files["ckpt/sub/"+fi.Name()]
		require.NoError(t, err, "OpenInfo(%s): %q, %v; want %q", fi.Name(), got, err, want)
		require.Equal(t, want, string(got), "OpenInfo(%s): %q, %v; want %q", fi.Name(), got, err, want)
	}
	require.Equal(t, heads, px.heads.Load(), "OpenInfo sent %d HEADs, want none", px.heads.Load()-heads)
	dir, err := bk.Stat(ctx, "ckpt")
	require.NoError(t, err)
	_, err = bk.OpenInfo(ctx, "ckpt", dir)
	require.ErrorIs(t, err, objstore.ErrInvalid, "OpenInfo of a directory: %v, want ErrInvalid", err)

	gone := client(t, mc.Endpoint()).Bucket("no-such-bucket-here")
	for _, name := range []string{"", "x", "x/y"} {
		_, err := gone.Stat(ctx, name)
		assert.ErrorIs(t, err, objstore.ErrNoBucket, "Stat(%q) in a missing bucket: %v, want ErrNoBucket and fs.ErrNotExist", name, err)
		assert.ErrorIs(t, err, fs.ErrNotExist, "Stat(%q) in a missing bucket: %v, want ErrNoBucket and fs.ErrNotExist", name, err)
	}
	_, err = gone.List(ctx, "")
	assert.ErrorIs(t, err, objstore.ErrNoBucket, "List in a missing bucket: %v, want ErrNoBucket", err)
}
