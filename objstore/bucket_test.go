package objstore_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/gdsload/gdsload/objstore"
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
			if !errors.Is(err, c.err) {
				t.Errorf("Stat(%q) = %v, %v; want %v", c.name, fi, err, c.err)
			}
			continue
		}
		if err != nil || fi.IsDir() != c.dir || fi.Size() != c.size || fi.Name() != c.base {
			t.Errorf("Stat(%q) = %v, %v; want dir=%v size=%d name=%q", c.name, fi, err, c.dir, c.size, c.base)
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
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("List(%q): %v, want %v", c.name, err, c.err)
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
		if !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %q, want %q", c.name, got, c.want)
		}
	}

	// A listing and a HEAD give an object the same time (a listing has
	// milliseconds, a HEAD whole seconds).
	ckpt, err := bk.List(ctx, "ckpt")
	if err != nil {
		t.Fatal(err)
	}
	head, err := bk.Stat(ctx, "ckpt/index.json")
	if err != nil || !head.ModTime().Equal(ckpt[0].ModTime()) || head.ModTime().IsZero() {
		t.Fatalf("Stat gives %v, List %v (%v)", head.ModTime(), ckpt[0].ModTime(), err)
	}

	var walked []string
	err = bk.WalkFiles(ctx, "ckpt", func(rel string, fi fs.FileInfo) error {
		walked = append(walked, rel)
		return nil
	})
	if want := []string{"index.json", "model.safetensors", "sub/a", "sub/b"}; err != nil || !slices.Equal(walked, want) {
		t.Fatalf("WalkFiles(ckpt) = %q, %v; want %q", walked, err, want)
	}
	if err := bk.WalkFiles(ctx, "nope", func(string, fs.FileInfo) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WalkFiles(nope): %v, want fs.ErrNotExist", err)
	}

	fis, err := bk.List(ctx, "ckpt/sub")
	if err != nil {
		t.Fatal(err)
	}
	heads := px.heads.Load()
	for _, fi := range fis {
		o, err := bk.OpenInfo(ctx, "ckpt/sub/"+fi.Name(), fi)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(ctx, o)
		if want := files["ckpt/sub/"+fi.Name()]; err != nil || string(got) != want {
			t.Fatalf("OpenInfo(%s): %q, %v; want %q", fi.Name(), got, err, want)
		}
	}
	if px.heads.Load() != heads {
		t.Fatalf("OpenInfo sent %d HEADs, want none", px.heads.Load()-heads)
	}
	dir, err := bk.Stat(ctx, "ckpt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bk.OpenInfo(ctx, "ckpt", dir); !errors.Is(err, objstore.ErrInvalid) {
		t.Fatalf("OpenInfo of a directory: %v, want ErrInvalid", err)
	}

	gone := client(t, mc.Endpoint()).Bucket("no-such-bucket-here")
	for _, name := range []string{"", "x", "x/y"} {
		if _, err := gone.Stat(ctx, name); !errors.Is(err, objstore.ErrNoBucket) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%q) in a missing bucket: %v, want ErrNoBucket and fs.ErrNotExist", name, err)
		}
	}
	if _, err := gone.List(ctx, ""); !errors.Is(err, objstore.ErrNoBucket) {
		t.Errorf("List in a missing bucket: %v, want ErrNoBucket", err)
	}
}
