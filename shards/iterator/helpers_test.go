package iterator

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// makeShards writes one shard per count (sample i of shard s has key
// "s<s>/<i>" and fields "txt" = key and "cls" = i); every third shard is
// zstd-compressed. It returns the scanned dataset.
func makeShards(t testing.TB, counts []int) *Dataset {
	t.Helper()
	return makeShardsCompressing(t, counts, func(s int) bool { return s%3 == 2 })
}

// makeShardsCompressing is makeShards with zstd for the shards s for
// which compress(s) holds.
func makeShardsCompressing(t testing.TB, counts []int, compress func(s int) bool) *Dataset {
	t.Helper()
	dir := t.TempDir()
	for s, n := range counts {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i := range n {
			key := fmt.Sprintf("s%02d/%03d", s, i)
			for _, f := range []struct{ ext, data string }{{"txt", key}, {"cls", fmt.Sprint(i)}} {
				require.NoError(t, tw.WriteHeader(&tar.Header{Name: key + "." + f.ext, Mode: 0o644, Size: int64(len(f.data))}))
				tw.Write([]byte(f.data))
			}
		}
		tw.Close()
		name := fmt.Sprintf("shard-%02d.tar", s)
		data := buf.Bytes()
		if compress(s) {
			enc, _ := zstd.NewWriter(nil)
			data = enc.EncodeAll(data, nil)
			name += ".zst"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	ds, err := Open(context.Background(), dir)
	require.NoError(t, err)
	return ds
}

// collect runs one iterator to the end (or limit samples, if > 0) and
// returns its samples and final state.
func collect(t testing.TB, ds *Dataset, opts Options, restore *State, limit int) ([]*Sample, State) {
	t.Helper()
	it, err := New(ds, opts)
	require.NoError(t, err)
	defer it.Close()
	if restore != nil {
		require.NoError(t, it.Restore(*restore))
	}
	var out []*Sample
	for limit <= 0 || len(out) < limit {
		s, err := it.Next(context.Background())
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		txt, _ := sampleField(s, "txt")
		require.Equal(t, s.Key, string(txt), "sample %s carries %q", s.Key, txt)
		out = append(out, s)
	}
	return out, it.State()
}

func sampleField(s *Sample, ext string) ([]byte, bool) {
	for _, f := range s.Fields {
		if f.Ext == ext {
			return f.Data, true
		}
	}
	return nil, false
}

// allRanks runs every rank of a world for one epoch and returns the
// samples per rank.
func allRanks(t testing.TB, ds *Dataset, opts Options, world int, restore *State, limit int) ([][]*Sample, []State) {
	t.Helper()
	out := make([][]*Sample, world)
	states := make([]State, world)
	for r := range world {
		o := opts
		o.Rank, o.WorldSize = r, world
		out[r], states[r] = collect(t, ds, o, restore, limit)
	}
	return out, states
}

// merge rebuilds the global sequence from rank streams: global position
// start+j goes to rank j mod world.
func merge(perRank [][]*Sample) []string {
	var seq []string
	for k := 0; ; k++ {
		added := false
		for _, rs := range perRank {
			if k < len(rs) {
				seq = append(seq, rs[k].Key)
				added = true
			}
		}
		if !added {
			return seq
		}
	}
}

func keysOf(ss []*Sample) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Key
	}
	return out
}
