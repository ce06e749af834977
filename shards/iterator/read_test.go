package iterator

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapCounter is a DirOpener that counts the shards it maps.
type mapCounter struct {
	DirOpener
	mapped *atomic.Int64
}

func (m mapCounter) MapShard(ctx context.Context, name string) ([]byte, func() error, error) {
	b, unmap, err := m.DirOpener.MapShard(ctx, name)
	if err == nil {
		m.mapped.Add(1)
	}
	return b, unmap, err
}

// withManifest gives ds the entries of a manifest built from its files
// (SHA-256 and CRC-32C), as a dataset opened from index.json has.
func withManifest(t *testing.T, ds *Dataset) *Dataset {
	t.Helper()
	m, err := webdataset.BuildManifest(context.Background(), ds.Root)
	require.NoError(t, err)
	return FromManifest(ds.Root, m)
}

// TestMappedShardsReadAlike: compressed shards read through the page cache
// are mapped and decoded from the mapping (Direct off); what comes out is
// what reading them into buffers gives, sample for sample and byte for
// byte, with checksums checked and not.
func TestMappedShardsReadAlike(t *testing.T) {
	ds := withManifest(t, makeShards(t, []int{4, 5, 6, 3, 2, 7}))
	ref, _ := collect(t, ds, Options{Shuffle: true, Seed: 3, Workers: 2}, nil, 0)
	for _, skip := range []bool{false, true} {
		var mapped atomic.Int64
		op := mapCounter{DirOpener{Root: ds.Root, Direct: loader.DirectOff}, &mapped}
		got, _ := collect(t, ds, Options{Shuffle: true, Seed: 3, Workers: 2, Opener: op, SkipChecksum: skip}, nil, 0)
		require.Len(t, got, len(ref), "mapped: %d samples, read: %d", len(got), len(ref))
		for i := range ref {
			require.Equal(t, ref[i].Key, got[i].Key, "sample %d: mapped %s/%s, read %s/%s", i, got[i].Shard, got[i].Key, ref[i].Shard, ref[i].Key)
			require.Equal(t, ref[i].Shard, got[i].Shard, "sample %d: mapped %s/%s, read %s/%s", i, got[i].Shard, got[i].Key, ref[i].Shard, ref[i].Key)
		}
		// Shards 2 and 5 are compressed: mapped; the others are read.
		assert.EqualValues(t, 2, mapped.Load(), "SkipChecksum %v: %d shards mapped, want the 2 compressed ones", skip, mapped.Load())
	}
	// With O_DIRECT allowed, nothing is mapped.
	var mapped atomic.Int64
	collect(t, ds, Options{Opener: mapCounter{DirOpener{Root: ds.Root}, &mapped}}, nil, 0)
	assert.Zero(t, mapped.Load(), "Direct auto: %d shards mapped", mapped.Load())
}

// TestDamagedCompressedShard: a flipped payload byte in a .tar.zst shard
// fails the shard, naming it, on every read path: against the manifest's
// CRC-32C by default, its SHA-256 when asked, and the zstd frame checksum
// when checksums are skipped.
func TestDamagedCompressedShard(t *testing.T) {
	ds := withManifest(t, makeShards(t, []int{3, 3, 9}))
	sh := ds.Shards[2]
	require.True(t, strings.HasSuffix(sh.Name, ".zst"), "shard %+v: want a zstd shard with both digests", sh)
	require.NotEmpty(t, sh.CRC32C, "shard %+v: want a zstd shard with both digests", sh)
	require.NotEmpty(t, sh.SHA256, "shard %+v: want a zstd shard with both digests", sh)
	p := filepath.Join(ds.Root, sh.Name)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	bad := slices.Clone(data)
	bad[len(bad)/2] ^= 0x20
	require.NoError(t, os.WriteFile(p, bad, 0o644))
	for _, direct := range []loader.DirectMode{loader.DirectAuto, loader.DirectOff} {
		for _, tt := range []struct {
			opts Options
			want string
		}{
			{Options{}, "crc32c"},
			{Options{SHA256: true}, "sha256"},
			{Options{SkipChecksum: true}, sh.Name},
		} {
			tt.opts.Direct = direct
			err := runToEnd(ds, tt.opts)
			assert.Error(t, err, "direct %v, %+v: %v; want an error naming %s and %q", direct, tt.opts, err, sh.Name, tt.want)
			assert.ErrorContains(t, err, sh.Name, "direct %v, %+v: %v; want an error naming %s and %q", direct, tt.opts, err, sh.Name, tt.want)
			assert.ErrorContains(t, err, tt.want, "direct %v, %+v: %v; want an error naming %s and %q", direct, tt.opts, err, sh.Name, tt.want)
			assert.False(t, !tt.opts.SkipChecksum && !errors.Is(err, webdataset.ErrShardChecksum), "direct %v, %+v: %v is not ErrShardChecksum", direct, tt.opts, err)
		}
	}
	// A manifest whose SHA-256 is wrong but CRC-32C right passes the
	// default check and fails the SHA-256 one.
	require.NoError(t, os.WriteFile(p, data, 0o644))
	forged := &Dataset{Root: ds.Root, Shards: slices.Clone(ds.Shards)}
	forged.Shards[2].SHA256 = strings.Repeat("0", 64)
	assert.NoError(t, runToEnd(forged, Options{}), "default check with a right CRC-32C")
	err = runToEnd(forged, Options{SHA256: true})
	assert.ErrorIs(t, err, webdataset.ErrShardChecksum, "SHA256 with a wrong SHA-256: %v, want ErrShardChecksum", err)
}

// TestTruncatedMappingFails: a shard file truncated under its mapping
// makes reading the mapping fail with an error naming the shard (SIGBUS
// turned into an error), not crash the process.
func TestTruncatedMappingFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.tar.zst")
	require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{7}, 1<<20), 0o644))
	data, unmap, err := DirOpener{Root: filepath.Dir(p), Direct: loader.DirectOff}.MapShard(context.Background(), "s.tar.zst")
	require.NoError(t, err)
	defer unmap()
	require.NoError(t, os.Truncate(p, 0))
	raw := rawShard{data: data, mapped: true}
	var sum byte
	err = guardMapped(raw, "s.tar.zst", func() error {
		for _, b := range data[len(data)/2:] {
			sum += b
		}
		return nil
	})
	require.Error(t, err, "reading a truncated mapping: %v (sum %d)", err, sum)
	require.ErrorContains(t, err, "s.tar.zst", "reading a truncated mapping: %v (sum %d)", err, sum)
	require.ErrorContains(t, err, "truncated", "reading a truncated mapping: %v (sum %d)", err, sum)
	// Other panics are not swallowed.
	defer func() {
		r := recover()
		require.Equal(t, "not a fault", r, "recovered %v, want the panic to go on", r)
	}()
	_ = guardMapped(raw, "s.tar.zst", func() error { panic("not a fault") })
}

// TestSkipBadShards: with a shard error handler, a corrupt shard no longer
// stops a dataset without a manifest from opening (it is left out), and a
// shard damaged after its manifest was written is skipped while
// iterating, by the sample and the whole-shard iterators (once one bad
// tar made the whole dataset refuse to open).
func TestSkipBadShards(t *testing.T) {
	ds := makeShards(t, []int{4, 5, 6, 3})
	bad := ds.Shards[1]
	p := filepath.Join(ds.Root, bad.Name)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	// Truncated inside the payload of sample 2's first member (a cut at a
	// block boundary reads as a shorter tar, in Python's tarfile too):
	// open fails without a handler.
	require.NoError(t, os.WriteFile(p, data[:2*2048+512+3], 0o644))
	ctx := context.Background()
	_, err = Open(ctx, ds.Root)
	require.ErrorContains(t, err, bad.Name, "Open without a handler: want an error naming %s", bad.Name)
	var told []string
	note := func(name string, err error) error { told = append(told, name); return nil }
	got, err := Open(ctx, ds.Root, WithReaderOptions(webdataset.WithShardErrorHandler(note)))
	require.NoError(t, err)
	require.Len(t, got.Shards, 3, "opened %d shards, handler told of %q; want %s left out", len(got.Shards), told, bad.Name)
	require.False(t, slices.ContainsFunc(got.Shards, func(s Shard) bool { return s.Name == bad.Name }), "opened %d shards, handler told of %q; want %s left out", len(got.Shards), told, bad.Name)
	require.True(t, slices.Equal(told, []string{bad.Name}), "opened %d shards, handler told of %q; want %s left out", len(got.Shards), told, bad.Name)
	// Damaged after the dataset was opened whole: iteration skips it.
	require.NoError(t, os.WriteFile(p, data, 0o644))
	whole := withManifest(t, ds)
	flipped := slices.Clone(data)
	flipped[600] ^= 0x40
	require.NoError(t, os.WriteFile(p, flipped, 0o644))
	err = runToEnd(whole, Options{})
	require.ErrorIs(t, err, webdataset.ErrShardChecksum, "without a handler")
	told = nil
	samples, st := collect(t, whole, Options{Shuffle: true, Seed: 5, Workers: 2, OnShardError: note}, nil, 0)
	require.Len(t, samples, 18-5, "%d samples, handler told of %q; want 13, and %s", len(samples), told, bad.Name)
	require.True(t, slices.Equal(told, []string{bad.Name}), "%d samples, handler told of %q; want 13, and %s", len(samples), told, bad.Name)
	for _, s := range samples {
		require.NotEqual(t, bad.Name, s.Shard, "sample %s of the skipped shard yielded", s.Key)
	}
	assert.EqualValues(t, 1, st.Epoch, "state after the epoch: %+v", st)
	assert.Zero(t, st.Consumed, "state after the epoch: %+v", st)
	stop := errors.New("stop")
	err = runToEnd(whole, Options{OnShardError: func(string, error) error { return stop }})
	assert.ErrorIs(t, err, stop, "a stopping handler")
	told = nil
	sit, err := NewShards(whole, Options{OnShardError: note})
	require.NoError(t, err)
	defer sit.Close()
	var names []string
	for {
		sd, err := sit.Next(ctx)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, sd.Name)
	}
	assert.Len(t, names, 3, "whole shards %q, handler told of %q", names, told)
	assert.False(t, slices.Contains(names, bad.Name), "whole shards %q, handler told of %q", names, told)
	assert.True(t, slices.Equal(told, []string{bad.Name}), "whole shards %q, handler told of %q", names, told)
}

// TestSplitSampleWarned: a sample split across two shards is yielded as
// its two parts, and the dataset says so.
func TestSplitSampleWarned(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, members ...string) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, m := range members {
			tw.WriteHeader(&tar.Header{Name: m, Mode: 0o644, Size: int64(len(m))})
			tw.Write([]byte(m))
		}
		tw.Close()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644))
	}
	write("a.tar", "k1.txt", "k2.txt")
	write("b.tar", "k2.cls", "k3.txt")
	ds, err := Open(context.Background(), dir)
	require.NoError(t, err)
	w := ds.Warnings()
	require.Len(t, w, 1, "warnings %q", w)
	require.Contains(t, w[0], "a.tar and b.tar", "warnings %q", w)
	it, err := New(ds, Options{})
	require.NoError(t, err)
	defer it.Close()
	var keys []string
	for {
		s, err := it.Next(context.Background())
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		keys = append(keys, s.Key)
	}
	assert.True(t, slices.Equal(keys, []string{"k1", "k2", "k2", "k3"}), "keys %q", keys)
}

// TestSummedWhileDecoding covers a zstd shard of data that does not
// compress, whose CRC-32C is summed as libzstd reads it, piece by piece
// (the shard spans several pieces): its samples come out whole, and a
// byte flipped near its start, in its middle or in its last byte is a
// checksum error naming it, whether or not the decoder fails first.
func TestSummedWhileDecoding(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	rng := rand.New(rand.NewPCG(5, 6))
	want := map[string][]byte{}
	for i := range 12 {
		data := make([]byte, 100_000+rng.IntN(50_000))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("s%03d", i)
		want[key] = data
		for _, f := range []struct {
			ext  string
			data []byte
		}{{"bin", data}, {"txt", []byte(key)}} { // collect checks txt
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: key + "." + f.ext, Mode: 0o644, Size: int64(len(f.data))}))
			_, err := tw.Write(f.data)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	stored := enc.EncodeAll(buf.Bytes(), nil)
	require.NoError(t, enc.Close())
	p := filepath.Join(dir, "rand.tar.zst")
	require.NoError(t, os.WriteFile(p, stored, 0o644))
	ds := withManifest(t, &Dataset{Root: dir})
	sh := ds.Shards[0]
	require.Less(t, sh.SampleBytes, 2*sh.Bytes, "a shard that does not compress")
	require.Greater(t, sh.Bytes, int64(1<<20), "a shard of several 256 KiB pieces")

	for _, direct := range []loader.DirectMode{loader.DirectAuto, loader.DirectOff} {
		got, _ := collect(t, ds, Options{Direct: direct}, nil, 0)
		require.Len(t, got, len(want))
		for _, s := range got {
			data, ok := sampleField(s, "bin")
			require.True(t, ok)
			require.True(t, bytes.Equal(want[s.Key], data), "sample %s", s.Key)
		}
	}
	for _, at := range []int{1000, len(stored) / 2, len(stored) - 1} {
		bad := slices.Clone(stored)
		bad[at] ^= 0x40
		require.NoError(t, os.WriteFile(p, bad, 0o644))
		for _, direct := range []loader.DirectMode{loader.DirectAuto, loader.DirectOff} {
			err := runToEnd(ds, Options{Direct: direct})
			require.ErrorIs(t, err, webdataset.ErrShardChecksum, "byte %d flipped, direct %v", at, direct)
			require.ErrorContains(t, err, sh.Name)
		}
	}
}
