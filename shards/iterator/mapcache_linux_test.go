package iterator

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/stretchr/testify/require"
)

// TestMapCache: what a cached opener maps again and what it reuses, as
// files change under it, at its limit and after close.
func TestMapCache(t *testing.T) {
	ctx := context.Background()
	write := func(t *testing.T, dir, name, data string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	type step struct {
		name     string
		change   func(t *testing.T, dir string) // before the mapping, if set
		want     string                         // content seen
		hit      bool                           // the cached mapping is used
		cached   int                            // entries afterwards
		holdOpen bool                           // keep this use until the end
	}
	for _, tc := range []struct {
		name  string
		limit int64
		close bool // close the cache before the last step
		steps []step
	}{
		{"unchanged file is mapped once", 1 << 20, false, []step{
			{name: "a", want: "aaaa", cached: 1},
			{name: "a", want: "aaaa", hit: true, cached: 1},
			{name: "a", want: "aaaa", hit: true, cached: 1},
		}},
		{"rewritten in place", 1 << 20, false, []step{
			{name: "a", want: "aaaa", cached: 1},
			{name: "a", change: func(t *testing.T, dir string) {
				// Same size; a later mtime even on a coarse clock.
				write(t, dir, "a", "AAAA")
				later := time.Now().Add(time.Hour)
				require.NoError(t, os.Chtimes(filepath.Join(dir, "a"), later, later))
			}, want: "AAAA", cached: 1},
			{name: "a", want: "AAAA", hit: true, cached: 1},
		}},
		{"replaced by rename", 1 << 20, false, []step{
			{name: "a", want: "aaaa", cached: 1, holdOpen: true},
			{name: "a", change: func(t *testing.T, dir string) {
				write(t, dir, "new", "bbbbbb")
				require.NoError(t, os.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "a")))
			}, want: "bbbbbb", cached: 1},
		}},
		{"larger than the limit", 3, false, []step{
			{name: "a", want: "aaaa", cached: 0},
			{name: "a", want: "aaaa", cached: 0},
		}},
		{"admits up to the limit, evicts nothing", 8, false, []step{
			{name: "a", want: "aaaa", cached: 1},
			{name: "b", want: "bbbb", cached: 2},
			{name: "c", want: "cccc", cached: 2},
			{name: "c", want: "cccc", cached: 2},
			{name: "a", want: "aaaa", hit: true, cached: 2},
			{name: "b", want: "bbbb", hit: true, cached: 2},
		}},
		{"closed", 1 << 20, true, []step{
			{name: "a", want: "aaaa", cached: 1, holdOpen: true},
			{name: "a", want: "aaaa", cached: 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range []string{"a", "b", "c"} {
				write(t, dir, n, n+n+n+n)
			}
			c := newMapCache(tc.limit)
			op := DirOpener{Root: dir, Direct: loader.DirectOff, maps: c}
			var held []func() error
			for i, s := range tc.steps {
				if s.change != nil {
					s.change(t, dir)
				}
				if tc.close && i == len(tc.steps)-1 {
					c.close()
				}
				hits := c.hits
				data, release, err := op.MapShard(ctx, s.name)
				require.NoError(t, err, "step %d", i)
				require.Equal(t, s.want, string(data), "step %d", i)
				require.Equal(t, s.hit, c.hits > hits, "step %d: hit", i)
				if s.holdOpen {
					held = append(held, release)
				} else {
					require.NoError(t, release(), "step %d", i)
				}
				require.Len(t, c.ents, s.cached, "step %d: entries", i)
			}
			// Mappings dropped while in use are still readable until their
			// release unmaps them.
			for _, release := range held {
				require.NoError(t, release())
			}
			var bytes int64
			for _, e := range c.ents {
				bytes += int64(len(e.data))
				require.Zero(t, e.refs, "an entry still in use after every release")
			}
			require.Equal(t, bytes, c.bytes)
			c.close()
			require.Empty(t, c.ents)
		})
	}
}

// TestIteratorKeepsMappings: an iterator over a dataset read through the
// page cache maps each compressed shard once over several epochs, yields
// what reading with O_DIRECT yields, and releases its mappings on Close.
func TestIteratorKeepsMappings(t *testing.T) {
	ds := withManifest(t, makeShardsCompressing(t, []int{4, 5, 6, 3}, func(int) bool { return true }))
	const epochs = 3
	ref, _ := collect(t, ds, Options{Shuffle: true, Seed: 5, Workers: 2, Epochs: epochs}, nil, 0)
	it, err := New(ds, Options{Shuffle: true, Seed: 5, Workers: 2, Epochs: epochs, Direct: loader.DirectOff})
	require.NoError(t, err)
	var got []string
	for {
		s, err := it.Next(context.Background())
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, s.Key)
	}
	require.Equal(t, keysOf(ref), got)
	require.Equal(t, 4*(epochs-1), it.maps.hits, "mappings reused after the first epoch")
	require.Len(t, it.maps.ents, 4)
	require.NoError(t, it.Close())
	require.Empty(t, it.maps.ents)
	require.Zero(t, it.maps.bytes)
}
