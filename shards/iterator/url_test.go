package iterator

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func urlMux(t *testing.T) *vfs.Mux {
	t.Helper()
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// A dataset on an rdmafs server opens through the same Open as on a disk,
// in every form a source takes, with the same shards, counts and
// fingerprint, so the epoch order is the same; iterators read its shards
// through the Mux it was found with.
func TestOpenURLMatchesLocal(t *testing.T) {
	local := makeShards(t, []int{5, 3, 7, 2})
	remote := rdmafstest.Serve(t, filepath.Dir(local.Root))
	base := remote + "/" + filepath.Base(local.Root)
	m := urlMux(t)
	ctx := context.Background()
	opts := Options{Seed: 3, Shuffle: true, Workers: 2, WorldSize: 2}
	wantSeq := merge(func() [][]*Sample { s, _ := allRanks(t, local, opts, 2, nil, 0); return s }())

	withManifest := t.TempDir()
	for _, sh := range local.Shards {
		b, err := os.ReadFile(filepath.Join(local.Root, sh.Name))
		require.NoError(t, err)
		os.WriteFile(filepath.Join(withManifest, sh.Name), b, 0o644)
	}
	mf, err := webdataset.BuildManifest(ctx, withManifest)
	require.NoError(t, err)
	require.NoError(t, webdataset.WriteManifest(ctx, withManifest, mf))
	remote2 := rdmafstest.Serve(t, withManifest)

	for _, tc := range []struct {
		name, source string
		shards       int
	}{
		{"directory scanned", base, 4},
		{"directory with a manifest", remote2 + "/", 4},
		{"manifest file", remote2 + "/index.json", 4},
		{"brace pattern", base + "/shard-{00..01}.tar", 2},
		{"one shard", base + "/shard-03.tar", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Open(ctx, tc.source, WithFS(m))
			require.NoError(t, err)
			defer ds.Close()
			require.Len(t, ds.Shards, tc.shards, "%d shards, want %d", len(ds.Shards), tc.shards)
			for _, sh := range ds.Shards {
				// What shapes the order is the same; digests depend on how
				// each was scanned (a manifest has SHA-256 and CRC-32C, a
				// local scan CRC-32C for compressed shards only).
				want := local.Shards[shardIndex(t, local, sh.Name)]
				require.Equal(t, want.Name, sh.Name, "shard %+v, local %+v", sh, want)
				require.Equal(t, want.Bytes, sh.Bytes, "shard %+v, local %+v", sh, want)
				require.Equal(t, want.Samples, sh.Samples, "shard %+v, local %+v", sh, want)
				require.Equal(t, want.SampleBytes, sh.SampleBytes, "shard %+v, local %+v", sh, want)
			}
			assert.True(t, strings.HasPrefix(ds.Root, "rdmafs://"), "root %s is not the URL", ds.Root)
			if tc.shards == 4 {
				require.Equal(t, local.Fingerprint(), ds.Fingerprint(), "fingerprint differs from the same files on a disk")
				got, _ := allRanks(t, ds, opts, 2, nil, 0)
				seq := merge(got)
				require.Equal(t, strings.Join(wantSeq, ","), strings.Join(seq, ","), "order %v, local %v", seq, wantSeq)
			}
		})
	}
}

func shardIndex(t *testing.T, ds *Dataset, name string) int {
	for i, s := range ds.Shards {
		if s.Name == name {
			return i
		}
	}
	require.FailNow(t, "no shard "+name)
	return -1
}

// World size 2 on a server, stopped mid-epoch and resumed from the state
// file at world size 3: every sample of the epoch exactly once across
// both runs; All and Get give what Next does.
func TestURLResumeAcrossWorldSizes(t *testing.T) {
	local := makeShards(t, []int{6, 4, 5})
	remote := rdmafstest.Serve(t, local.Root)
	t.Setenv("GDSLOAD_TOKEN", string(rdmafstest.Token))
	ctx := context.Background()
	ds, err := Open(ctx, remote+"/") // its own Mux, from the environment
	require.NoError(t, err)
	defer ds.Close()
	opts := Options{Seed: 7, Shuffle: true, Partitions: 6, DropRemainder: true}
	first, states := allRanks(t, ds, opts, 2, nil, 3)
	stateFile := filepath.Join(t.TempDir(), "state.json")
	require.NoError(t, WriteStateFile(ctx, stateFile, states[0]))
	st, err := ReadStateFile(stateFile)
	require.NoError(t, err, "state read back %+v, %v; want %+v", st, err, states[0])
	require.Equal(t, states[0], st, "state read back %+v, %v; want %+v", st, err, states[0])
	seen := map[string]int{}
	for _, rs := range first {
		for _, s := range rs {
			seen[s.Key]++
		}
	}
	for r := range 3 {
		o := opts
		o.Rank, o.WorldSize = r, 3
		it, err := New(ds, o)
		require.NoError(t, err)
		require.NoError(t, it.Restore(st))
		for s, err := range it.All(ctx) {
			require.NoError(t, err)
			txt, ok := s.Get("txt")
			require.True(t, ok, "Get(txt) of %s = %q, %t", s.Key, txt, ok)
			require.Equal(t, s.Key, string(txt), "Get(txt) of %s = %q, %t", s.Key, txt, ok)
			_, ok = s.Get("jpg")
			require.False(t, ok, "Get of a missing extension found one")
			seen[s.Key]++
		}
		it.Close()
	}
	require.Len(t, seen, 15, "%d distinct samples over both runs, want 15", len(seen))
	for k, n := range seen {
		require.Equal(t, 1, n, "sample %s seen %d times", k, n)
	}
}

// A missing source matches fs.ErrNotExist, on a disk and on a server,
// through Open.
func TestOpenMissingMatchesErrNotExist(t *testing.T) {
	dir := t.TempDir()
	remote := rdmafstest.Serve(t, dir)
	m := urlMux(t)
	for _, src := range []string{filepath.Join(dir, "nope"), remote + "/nope", remote + "/nope/index.json", "file://" + filepath.Join(dir, "nope")} {
		_, err := Open(context.Background(), src, WithFS(m))
		assert.ErrorIs(t, err, fs.ErrNotExist, "%s: %v, want an error matching fs.ErrNotExist", src, err)
	}
	_, err := Open(context.Background(), remote+"/", WithFS(m))
	assert.Error(t, err, "an empty export: %v", err)
	assert.ErrorContains(t, err, "no shards", "an empty export: %v", err)
	_, err = Open(context.Background(), remote, WithScanWorkers(0))
	assert.Error(t, err, "0 scan workers accepted")
}

// All ends cleanly at the end, and reports a failure once.
func TestAllStopsAndReports(t *testing.T) {
	ds := makeShards(t, []int{3, 2})
	it, err := New(ds, Options{})
	require.NoError(t, err)
	n := 0
	for s, err := range it.All(context.Background()) {
		require.NoError(t, err, err)
		require.NotNil(t, s, err)
		n++
		if n == 2 {
			break
		}
	}
	st := it.State()
	require.EqualValues(t, 2, st.Consumed, "stopped after 2 samples, state says %d consumed", st.Consumed)
	it.Close()
	var errs int
	for _, err := range it.All(context.Background()) {
		if err != nil {
			errs++
		}
	}
	require.Equal(t, 1, errs, "a closed iterator reported %d errors, want 1", errs)
}
