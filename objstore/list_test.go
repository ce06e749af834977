package objstore_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestListTenThousand: a prefix of 10,000 keys lists completely, in order,
// through the pagination of S3's 1,000-key pages, with each key's size
// and ETag; keys beside the prefix stay out.
func TestListTenThousand(t *testing.T) {
	const n = 10_000
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	start := time.Now()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("many/k%05d", i)
	}
	require.NoError(t, mc.PutMany(context.Background(), b, keys, func(i int) []byte { return []byte(keys[i][:i%7]) }))
	put(t, mc, b, "many-not/x", []byte("x"))
	put(t, mc, b, "other", []byte("y"))
	t.Logf("10,000 objects written in %v", time.Since(start))

	px := newHTTPProxy(t, mc.Endpoint())
	cl := client(t, px.url())
	start = time.Now()
	l, err := cl.List(context.Background(), b, "many/", "")
	require.NoError(t, err)
	t.Logf("listed %d keys in %v, %d requests", len(l.Objects), time.Since(start), px.lists.Load())
	require.Len(t, l.Objects, n, "listed %d objects and %d prefixes, want %d and 0", len(l.Objects), len(l.Prefixes), n)
	require.Len(t, l.Prefixes, 0, "listed %d objects and %d prefixes, want %d and 0", len(l.Objects), len(l.Prefixes), n)
	for i, o := range l.Objects {
		require.EqualValues(t, keys[i], o.Key, "entry %d: %+v, want key %s of %d bytes", i, o, keys[i], i%7)
		require.EqualValues(t, int64(i%7), o.Size, "entry %d: %+v, want key %s of %d bytes", i, o, keys[i], i%7)
		require.NotEqualValues(t, "", o.ETag, "entry %d: %+v, want key %s of %d bytes", i, o, keys[i], i%7)
		require.EqualValues(t, b, o.Bucket, "entry %d: %+v, want key %s of %d bytes", i, o, keys[i], i%7)
	}
	p := px.lists.Load()
	require.GreaterOrEqual(t, p, int64(n/1000), "%d list requests for %d keys: pages of at most 1,000 keys were not followed", p, n)
}

// TestListDelimiter: S3's prefix and delimiter semantics: with "/" the
// keys below the next "/" roll up into common prefixes; without, every key
// under the prefix is listed; a prefix that is not a "directory" matches
// key beginnings; an empty listing is not an error.
func TestListDelimiter(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	for _, k := range []string{"a/1", "a/b/2", "a/b/3", "a/c/4", "ab", "a.txt", "z"} {
		put(t, mc, b, k, []byte(k))
	}
	cl := client(t, mc.Endpoint())
	cases := []struct {
		prefix, delim string
		objects       []string
		prefixes      []string
	}{
		{"a/", "/", []string{"a/1"}, []string{"a/b/", "a/c/"}},
		{"a/", "", []string{"a/1", "a/b/2", "a/b/3", "a/c/4"}, nil},
		{"a", "/", []string{"a.txt", "ab"}, []string{"a/"}},
		{"", "/", []string{"a.txt", "ab", "z"}, []string{"a/"}},
		{"a/b/", "/", []string{"a/b/2", "a/b/3"}, nil},
		{"nothing/", "/", nil, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q,%q", c.prefix, c.delim), func(t *testing.T) {
			l, err := cl.List(context.Background(), b, c.prefix, c.delim)
			require.NoError(t, err)
			var got []string
			for _, o := range l.Objects {
				got = append(got, o.Key)
			}
			require.True(t, slices.Equal(got, c.objects), "objects %q prefixes %q, want %q and %q", got, l.Prefixes, c.objects, c.prefixes)
			require.True(t, slices.Equal(l.Prefixes, c.prefixes), "objects %q prefixes %q, want %q and %q", got, l.Prefixes, c.objects, c.prefixes)
		})
	}
}

// TestMissing: a missing bucket or key matches fs.ErrNotExist from Stat,
// Open and List, and the error names the URL and which one is missing.
func TestMissing(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	put(t, mc, b, "here", []byte("x"))
	cl := client(t, mc.Endpoint())
	ctx := context.Background()
	cases := []struct {
		name, bucket, key, says string
		op                      func(bucket, key string) error
	}{
		{"stat missing key", b, "gone", "no such key", func(bk, k string) error { _, err := cl.Stat(ctx, bk, k); return err }},
		{"open missing key", b, "dir/gone", "no such key", func(bk, k string) error { _, err := cl.Open(ctx, bk, k); return err }},
		{"stat missing bucket", "no-such-bucket-x", "here", "no such bucket", func(bk, k string) error { _, err := cl.Stat(ctx, bk, k); return err }},
		{"open missing bucket", "no-such-bucket-x", "here", "no such bucket", func(bk, k string) error { _, err := cl.Open(ctx, bk, k); return err }},
		{"list missing bucket", "no-such-bucket-x", "p/", "no such bucket", func(bk, k string) error { _, err := cl.List(ctx, bk, k, "/"); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.op(c.bucket, c.key)
			require.ErrorIs(t, err, fs.ErrNotExist, "err = %v, want fs.ErrNotExist", err)
			url := "s3://" + c.bucket + "/" + c.key
			require.ErrorContains(t, err, url, "error %q does not name %s and say %q", err, url, c.says)
			require.ErrorContains(t, err, c.says, "error %q does not name %s and say %q", err, url, c.says)
		})
	}
}
