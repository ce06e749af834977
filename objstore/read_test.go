package objstore_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"runtime"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/objstore"
)

// An Object is a loader source.
var _ loader.Source = (*objstore.Object)(nil)

// TestReadSizes: objects of 0, 1, 4097 and 64 MiB + 1 bytes read
// byte-exact from one server and from the 4-node erasure-coded cluster,
// through one ReadAt (parallel ranges) and through a loader load into a
// reused ring of 4 MiB buffers (the way `gdsload load` reads them). Each
// object's bytes differ (seeded by size), so a range landing at the wrong
// offset or from the wrong object shows.
func TestReadSizes(t *testing.T) {
	sizes := []int{0, 1, 4097, 64<<20 + 1}
	for _, layout := range []struct {
		name  string
		nodes int
	}{{"single", 1}, {"distributed", 4}} {
		t.Run(layout.name, func(t *testing.T) {
			mc := sharedCluster(t, layout.nodes)
			b := newBucket(t, mc)
			want := map[int][]byte{}
			for _, n := range sizes {
				want[n] = testData(n, uint64(n)+7)
				put(t, mc, b, sizeKey(n), want[n])
			}
			cl := client(t, mc.Endpoint())
			ring, err := loader.NewRing(8, 4<<20)
			require.NoError(t, err)
			defer ring.Close()
			for _, n := range sizes {
				o := open(t, cl, b, sizeKey(n))
				require.EqualValues(t, int64(n), o.Size(), "size %d: opened %s size %d etag %q mtime %v", n, o.Name(), o.Size(), o.ETag(), o.ModTime())
				require.NotEqualValues(t, "", o.ETag(), "size %d: opened %s size %d etag %q mtime %v", n, o.Name(), o.Size(), o.ETag(), o.ModTime())
				require.False(t, o.ModTime().IsZero(), "size %d: opened %s size %d etag %q mtime %v", n, o.Name(), o.Size(), o.ETag(), o.ModTime())
				require.EqualValues(t, "s3://"+b+"/"+sizeKey(n), o.Name(), "size %d: opened %s size %d etag %q mtime %v", n, o.Name(), o.Size(), o.ETag(), o.ModTime())
				got, err := readAll(context.Background(), o)
				require.NoError(t, err, "size %d: ReadAt: %v (or bytes differ)", n, err)
				require.True(t, bytes.Equal(got, want[n]), "size %d: ReadAt: %v (or bytes differ)", n, err)
				res, err := loader.Load(context.Background(), []loader.Job{loader.WholeFile(o, ring)},
					loader.Options{Workers: 8, Checksum: loader.ChecksumSHA256})
				require.NoError(t, err, "size %d: load into a ring: %v", n, err)
				require.EqualValues(t, int64(n), res.Bytes, "size %d: load landed %d bytes with sha256 %s, want %d and %s", n, res.Bytes, res.Files[0].SHA256, n, sha256hex(want[n]))
				require.EqualValues(t, sha256hex(want[n]), res.Files[0].SHA256, "size %d: load landed %d bytes with sha256 %s, want %d and %s", n, res.Bytes, res.Files[0].SHA256, n, sha256hex(want[n]))
			}
		})
	}
}

func sizeKey(n int) string { return "sizes/obj-" + itoa(n) }

// TestReadAtContract: reads at odd offsets and lengths, across range
// boundaries, past the end (io.EOF with the bytes there were), at the end,
// negative offsets, and after Close.
func TestReadAtContract(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	data := testData(3<<20+5, 3)
	put(t, mc, b, "obj", data)
	cl := client(t, mc.Endpoint(), objstore.WithRangeSize(1<<20), objstore.WithConcurrency(3))
	o := open(t, cl, b, "obj")
	size := int64(len(data))
	cases := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantErr error
	}{
		{"head", 0, 10, 10, nil},
		{"across a range boundary", 1<<20 - 3, 7, 7, nil},
		{"several ranges, unaligned", 12345, 2<<20 + 17, 2<<20 + 17, nil},
		{"tail", size - 5, 5, 5, nil},
		{"past the end", size - 5, 10, 5, io.EOF},
		{"at the end", size, 1, 0, io.EOF},
		{"far past the end", size + 100, 1, 0, io.EOF},
		{"empty", 7, 0, 0, nil},
		{"negative offset", -1, 1, 0, objstore.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := make([]byte, c.n)
			n, err := o.ReadAt(p, c.off)
			require.Equal(t, c.wantN, n, "ReadAt(%d bytes at %d) = %d, %v; want %d, %v", c.n, c.off, n, err, c.wantN, c.wantErr)
			require.ErrorIs(t, err, c.wantErr, "ReadAt(%d bytes at %d) = %d, %v; want %d, %v", c.n, c.off, n, err, c.wantN, c.wantErr)
			require.False(t, c.wantErr == nil && err != nil, "ReadAt(%d bytes at %d) = %d, %v; want %d, %v", c.n, c.off, n, err, c.wantN, c.wantErr)
			require.False(t, n > 0 && !bytes.Equal(p[:n], data[c.off:c.off+int64(n)]), "bytes differ")
		})
	}
	o.Close()
	_, err := o.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, fs.ErrClosed, "read after Close: %v, want fs.ErrClosed", err)
}

// TestWholeObjectChecksum: a read of a whole object that fits one range is
// verified against the full-object checksum MinIO keeps (each algorithm the
// SDK can send with a PUT); an object stored without one reads unverified.
// A proxy that flips one byte of every body makes the whole-object read
// fail with ErrChecksum, after the few retries a damaged transfer gets,
// never a retry storm; a partial read, which no checksum covers, goes
// through.
func TestWholeObjectChecksum(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	data := testData(100_000, 5)
	px := newHTTPProxy(t, mc.Endpoint())
	cl := client(t, px.url())
	algs := []types.ChecksumAlgorithm{
		types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmCrc64nvme,
		types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256, "",
	}
	for _, alg := range algs {
		name := string(alg)
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			key := "obj-" + string(alg)
			_, err := mc.PutWithChecksum(context.Background(), b, key, data, alg)
			require.NoError(t, err)
			o := open(t, cl, b, key)
			px.corrupt.Store(false)
			got, err := readAll(context.Background(), o)
			require.NoError(t, err, "whole read")
			require.True(t, bytes.Equal(got, data), "whole read: bytes differ")
			require.EqualValues(t, string(alg), o.Verified(), "whole read verified with %q, want %q", o.Verified(), alg)
			px.corrupt.Store(true)
			defer px.corrupt.Store(false)
			gets := px.gets.Load()
			_, err = readAll(context.Background(), o)
			if alg == "" {
				require.NoError(t, err, "damaged read of an object without a checksum: %v", err)
				return
			}
			require.ErrorIs(t, err, objstore.ErrChecksum, "damaged whole read: %v, want ErrChecksum naming %s", err, o.Name())
			require.ErrorContains(t, err, o.Name(), "damaged whole read: %v, want ErrChecksum naming %s", err, o.Name())
			n := px.gets.Load() - gets
			require.EqualValues(t, 3, n, "a damaged body was fetched %d times; want 3 (two retries)", n)
			t.Logf("damaged read: %v", err)
			part := make([]byte, 1000)
			_, err = o.ReadAt(part, 10)
			require.NoError(t, err, "partial read")
		})
	}
}

// TestRequestsPerRead: a 16 MiB + 1 object at the default range size costs
// one HEAD and ceil(size/range) ranged GETs, each asking the bytes of its
// range, over no more connections than the concurrency; reading it again
// reuses those connections.
func TestRequestsPerRead(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	data := testData(2*objstore.DefaultRangeSize+1, 9)
	put(t, mc, b, "obj", data)
	px := newHTTPProxy(t, mc.Endpoint())
	const conc = 2
	cl := client(t, px.url(), objstore.WithConcurrency(conc))
	o := open(t, cl, b, "obj")
	for round := range 3 {
		got, err := readAll(context.Background(), o)
		require.NoError(t, err, "round %d: %v (or bytes differ)", round, err)
		require.True(t, bytes.Equal(got, data), "round %d: %v (or bytes differ)", round, err)
	}
	wantGets := 3 * int64((len(data)+objstore.DefaultRangeSize-1)/objstore.DefaultRangeSize)
	require.EqualValues(t, 1, px.heads.Load(), "%d HEADs and %d GETs for 3 reads of two ranges + 1 byte, want 1 and %d", px.heads.Load(), px.gets.Load(), wantGets)
	require.EqualValues(t, wantGets, px.gets.Load(), "%d HEADs and %d GETs for 3 reads of two ranges + 1 byte, want 1 and %d", px.heads.Load(), px.gets.Load(), wantGets)
	c := px.conns.Load()
	require.LessOrEqual(t, c, int64(conc), "%d connections for a concurrency of %d: connections are not reused", c, conc)
	m := px.maxIn.Load()
	require.LessOrEqual(t, m, int64(conc), "%d GETs in flight at once, over the concurrency of %d", m, conc)
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, r := range px.ranges[:3] {
		require.NotEqualValues(t, "", r, "a GET of part of a large object has no Range header: %q", px.ranges)
	}
}

// TestReadIntoCallerMemory: loading 64 MiB into a ring of reused 4 MiB
// buffers allocates a small fraction of the object on the Go heap: the
// bodies of the ranged GETs are read straight into the ring's buffers,
// never into a buffer the size of the object or of a range.
func TestReadIntoCallerMemory(t *testing.T) {
	mc := sharedCluster(t, 1)
	b := newBucket(t, mc)
	const size = 64 << 20
	put(t, mc, b, "obj", testData(size, 31))
	cl := client(t, mc.Endpoint())
	o := open(t, cl, b, "obj")
	ring, err := loader.NewRing(8, 4<<20)
	require.NoError(t, err)
	defer ring.Close()
	load := func() {
		_, err := loader.Load(context.Background(), []loader.Job{loader.WholeFile(o, ring)}, loader.Options{Workers: 8})
		require.NoError(t, err)
	}
	load() // connections made, pools warmed
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	load()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 64 MiB load allocated %d KiB on the heap", allocated>>10)
	require.LessOrEqual(t, allocated, uint64(size/16), "a 64 MiB load allocated %d bytes on the heap: bodies are buffered, not read into the ring", allocated)
}
