package objstore_test

import (
	"bytes"
	"context"
	"io/fs"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/objstore"
)

// TestOverwriteDuringRead: an object replaced after Open fails the next
// read with ErrChanged (the GET is pinned with If-Match), so old and new
// bytes are never mixed; deleted after Open, the same. Opened again, the
// new version reads byte-exact.
func TestOverwriteDuringRead(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	old, repl := testData(3<<20, 1), testData(3<<20, 2)
	put(t, mc, b, "obj", old)
	cl := client(t, mc.Endpoint(), objstore.WithRangeSize(1<<20))
	o := open(t, cl, b, "obj")
	first := make([]byte, 1<<20)
	_, err := o.ReadAt(first, 0)
	require.NoError(t, err, "first range")
	require.True(t, bytes.Equal(first, old[:1<<20]), "first range: bytes differ")
	put(t, mc, b, "obj", repl)
	rest := make([]byte, 2<<20)
	_, err = o.ReadAt(rest, 1<<20)
	require.ErrorIs(t, err, objstore.ErrChanged, "read after an overwrite: %v, want ErrChanged", err)
	t.Logf("%v", err)
	o2 := open(t, cl, b, "obj")
	got, err := readAll(context.Background(), o2)
	require.NoError(t, err, "reopened: %v (or bytes differ)", err)
	require.True(t, bytes.Equal(got, repl), "reopened: %v (or bytes differ)", err)
	_, err = mc.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("obj")})
	require.NoError(t, err)
	_, err = o2.ReadAt(rest, 0)
	require.ErrorIs(t, err, objstore.ErrChanged, "read after a delete: %v, want ErrChanged and fs.ErrNotExist", err)
	require.ErrorIs(t, err, fs.ErrNotExist, "read after a delete: %v, want ErrChanged and fs.ErrNotExist", err)
}

// TestOverwriteDuringLoad: the object is replaced while a loader load of it
// is under way (from the loader's progress callback, after its first
// chunks landed): the load fails with ErrChanged naming the object.
func TestOverwriteDuringLoad(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	data := testData(16<<20, 3)
	put(t, mc, b, "obj", data)
	cl := client(t, mc.Endpoint(), objstore.WithRangeSize(1<<20))
	o := open(t, cl, b, "obj")
	buf := make([]byte, len(data))
	var (
		mu       sync.Mutex
		landed   int64
		replaced bool
	)
	_, err := loader.Load(context.Background(), []loader.Job{loader.WholeFile(o, loader.NewHostBuffer(buf))},
		loader.Options{Workers: 2, ChunkSize: 1 << 20, OnProgress: func(n int64) {
			// The first call past 4 MiB replaces the object while
			// the other worker keeps reading.
			mu.Lock()
			defer mu.Unlock()
			if landed += n; landed >= 4<<20 && !replaced {
				replaced = true
				put(t, mc, b, "obj", testData(16<<20, 4))
			}
		}})
	require.ErrorIs(t, err, objstore.ErrChanged, "load across an overwrite: %v, want ErrChanged", err)
	t.Logf("%v", err)
}
