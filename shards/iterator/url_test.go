package iterator

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

func urlMux(t *testing.T) *vfs.Mux {
	t.Helper()
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	if err != nil {
		t.Fatal(err)
	}
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
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(withManifest, sh.Name), b, 0o644)
	}
	mf, err := webdataset.BuildManifest(ctx, withManifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := webdataset.WriteManifest(ctx, withManifest, mf); err != nil {
		t.Fatal(err)
	}
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
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			if len(ds.Shards) != tc.shards {
				t.Fatalf("%d shards, want %d", len(ds.Shards), tc.shards)
			}
			for _, sh := range ds.Shards {
				// What shapes the order is the same; digests depend on how
				// each was scanned (a manifest has SHA-256 and CRC-32C, a
				// local scan CRC-32C for compressed shards only).
				want := local.Shards[shardIndex(t, local, sh.Name)]
				if sh.Name != want.Name || sh.Bytes != want.Bytes || sh.Samples != want.Samples || sh.SampleBytes != want.SampleBytes {
					t.Fatalf("shard %+v, local %+v", sh, want)
				}
			}
			if !strings.HasPrefix(ds.Root, "rdmafs://") {
				t.Errorf("root %s is not the URL", ds.Root)
			}
			if tc.shards == 4 {
				if ds.Fingerprint() != local.Fingerprint() {
					t.Fatal("fingerprint differs from the same files on a disk")
				}
				got, _ := allRanks(t, ds, opts, 2, nil, 0)
				if seq := merge(got); strings.Join(seq, ",") != strings.Join(wantSeq, ",") {
					t.Fatalf("order %v, local %v", seq, wantSeq)
				}
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
	t.Fatalf("no shard %s", name)
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
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	opts := Options{Seed: 7, Shuffle: true, Partitions: 6, DropRemainder: true}
	first, states := allRanks(t, ds, opts, 2, nil, 3)
	stateFile := filepath.Join(t.TempDir(), "state.json")
	if err := WriteStateFile(ctx, stateFile, states[0]); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStateFile(stateFile)
	if err != nil || st != states[0] {
		t.Fatalf("state read back %+v, %v; want %+v", st, err, states[0])
	}
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
		if err != nil {
			t.Fatal(err)
		}
		if err := it.Restore(st); err != nil {
			t.Fatal(err)
		}
		for s, err := range it.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			txt, ok := s.Get("txt")
			if !ok || string(txt) != s.Key {
				t.Fatalf("Get(txt) of %s = %q, %t", s.Key, txt, ok)
			}
			if _, ok := s.Get("jpg"); ok {
				t.Fatal("Get of a missing extension found one")
			}
			seen[s.Key]++
		}
		it.Close()
	}
	if len(seen) != 15 {
		t.Fatalf("%d distinct samples over both runs, want 15", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("sample %s seen %d times", k, n)
		}
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
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want an error matching fs.ErrNotExist", src, err)
		}
	}
	if _, err := Open(context.Background(), remote+"/", WithFS(m)); err == nil || !strings.Contains(err.Error(), "no shards") {
		t.Errorf("an empty export: %v", err)
	}
	if _, err := Open(context.Background(), remote, WithScanWorkers(0)); err == nil {
		t.Error("0 scan workers accepted")
	}
}

// All ends cleanly at the end, and reports a failure once.
func TestAllStopsAndReports(t *testing.T) {
	ds := makeShards(t, []int{3, 2})
	it, err := New(ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s, err := range it.All(context.Background()) {
		if err != nil || s == nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	st := it.State()
	if st.Consumed != 2 {
		t.Fatalf("stopped after 2 samples, state says %d consumed", st.Consumed)
	}
	it.Close()
	var errs int
	for _, err := range it.All(context.Background()) {
		if err != nil {
			errs++
		}
	}
	if errs != 1 {
		t.Fatalf("a closed iterator reported %d errors, want 1", errs)
	}
}
