package iterator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getWait hands out a buffer that comes back instead of allocating past
// its limit, allocates when grow says so (asked again on wake), and gives
// up with the context. live counts what was allocated, so a call that
// allocated instead of waiting shows as one buffer too many.
func TestBufferPoolGetWait(t *testing.T) {
	never := func() bool { return false }
	type result struct {
		buf []byte
		err error
	}
	wait := func(p *bufferPool, ctx context.Context, grow func() bool) chan result {
		done := make(chan result, 1)
		go func() {
			b, err := p.getWait(ctx, 1<<20, 1, grow)
			done <- result{b, err}
		}()
		return done
	}
	ctx := context.Background()

	t.Run("waits for a buffer to come back", func(t *testing.T) {
		p := &bufferPool{keep: 4}
		first, err := p.getWait(ctx, 1<<20, 1, never)
		require.NoError(t, err, "first buffer: %v, %d live", err, p.live)
		require.Equal(t, 1, p.live, "first buffer: %v, %d live", err, p.live)
		done := wait(p, ctx, never)
		p.put(first)
		r := <-done
		require.NoError(t, r.err, "got %v (same buffer: %v), want the buffer put back", r.err, r.err == nil && &r.buf[:1][0] == &first[:1][0])
		require.Same(t, &first[:1][0], &r.buf[:1][0], "got %v (same buffer: %v), want the buffer put back", r.err, r.err == nil && &r.buf[:1][0] == &first[:1][0])
		require.Equal(t, 1, p.live, "%d buffers live, want 1: the caller allocated past its limit instead of waiting", p.live)
	})

	t.Run("allocates when grow allows", func(t *testing.T) {
		p := &bufferPool{keep: 4}
		_, err := p.getWait(ctx, 1<<20, 1, never)
		require.NoError(t, err)
		var allow atomic.Bool
		done := wait(p, ctx, allow.Load)
		allow.Store(true)
		p.wake()
		r := <-done
		require.NoError(t, r.err, "got %d/%d bytes, %v", len(r.buf), cap(r.buf), r.err)
		require.Empty(t, r.buf, "got %d/%d bytes, %v", len(r.buf), cap(r.buf), r.err)
		require.GreaterOrEqual(t, cap(r.buf), 1<<20, "got %d/%d bytes, %v", len(r.buf), cap(r.buf), r.err)
		require.Equal(t, 2, p.live, "%d buffers live, want 2", p.live)
	})

	t.Run("gives up with the context", func(t *testing.T) {
		p := &bufferPool{keep: 4}
		_, err := p.getWait(ctx, 1<<20, 1, never)
		require.NoError(t, err)
		cctx, cancel := context.WithCancel(ctx)
		done := wait(p, cctx, never)
		cancel()
		r := <-done
		require.ErrorIs(t, r.err, context.Canceled, "got %d bytes, %v; want context.Canceled", len(r.buf), r.err)
		require.Nil(t, r.buf, "got %d bytes, %v; want context.Canceled", len(r.buf), r.err)
		require.Equal(t, 1, p.live, "%d buffers live after giving up, want 1", p.live)
	})

	t.Run("counts buffers let go", func(t *testing.T) {
		p := &bufferPool{keep: 1}
		a, b := p.get(1<<20), p.get(1<<20)
		p.put(a)
		p.put(b) // beyond keep: dropped
		require.Equal(t, 1, p.live, "%d live after dropping one of two, want 1", p.live)
		p.get(4 << 20) // the free one is too small: dropped, a bigger one made
		require.Equal(t, 1, p.live, "%d live, %d free after replacing a small buffer, want 1 and 0", p.live, len(p.free))
		require.Empty(t, p.free, "%d live, %d free after replacing a small buffer, want 1 and 0", p.live, len(p.free))
	})
}

// Decoders that wait for buffers never stall the job the consumer waits
// for, even when it holds buffers it cannot give back yet: shuffle windows
// of several shards (a visit loads all of them before it yields one) and
// more partitions than ranks (a rank holds one visit per partition), every
// shard compressed (each decoded into a pooled buffer), more workers than
// buffers they may fill without the exemption. A stall fails at the
// context's deadline instead of hanging the test run.
func TestDecodeBuffersNeverStallTheConsumer(t *testing.T) {
	ds := makeShardsCompressing(t, testCounts, func(int) bool { return true })
	base := Options{WorldSize: 2, Rank: 1, Partitions: 6, Shuffle: true, Seed: 3, ShuffleBytes: 2000, Epochs: 2}
	var ref []string
	for _, wp := range [][2]int{{1, 2}, {1, 1}, {2, 2}, {4, 8}, {3, 1}} {
		o := base
		o.Workers, o.Prefetch = wp[0], wp[1]
		it, err := New(ds, o)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var keys []string
		for s, err := range it.All(ctx) {
			require.NoError(t, err, "workers %d, prefetch %d, after %d samples", wp[0], wp[1], len(keys))
			keys = append(keys, s.Key)
		}
		cancel()
		it.Close()
		if ref == nil {
			want := 2 * (total(testCounts) + 1) / 2
			require.Len(t, keys, want, "%d samples in two epochs at world size 2, want %d", len(keys), want)
			ref = keys
		} else {
			require.Equal(t, ref, keys, "workers %d, prefetch %d: %d samples, order differs from 1 worker's %d", wp[0], wp[1], len(keys), len(ref))
		}
	}
}

// Shards whose decoded sizes fall on both sides of a pool size class share
// buffers: each asks for the dataset's largest size (when it is at most a
// quarter more than its own), so no buffer is dropped for being a little
// too small and replaced by fresh memory. With sizes further apart, each
// shard keeps its own size.
func TestDecodeBuffersShareOneSizeClass(t *testing.T) {
	for _, tc := range []struct {
		name       string
		small, big int64 // SampleBytes of even and odd shards
		wantSame   bool  // every shard asks for the big shards' size
		wantAllocs int   // buffers the pool allocates for the sequence below
	}{
		{"within a quarter", 9 << 20, 10<<20 + 512<<10, true, 2},
		{"further apart", 4 << 20, 10 << 20, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := withManifest(t, makeShardsCompressing(t, []int{3, 4, 3, 4}, func(int) bool { return true }))
			for i := range ds.Shards {
				ds.Shards[i].SampleBytes = tc.small
				if i%2 == 1 {
					ds.Shards[i].SampleBytes = tc.big
				}
			}
			it, err := New(ds, Options{Workers: 2})
			require.NoError(t, err)
			defer it.Close()
			hint := func(i int) int64 { return it.bufferHint(ds.Shards[i]) }
			require.Equal(t, tc.wantSame, (hint(0) == hint(1)), "hints %d and %d (own %d and %d)", hint(0), hint(1), decodeHint(ds.Shards[0]), decodeHint(ds.Shards[1]))
			require.Equal(t, decodeHint(ds.Shards[1]), hint(1), "hints %d and %d (own %d and %d)", hint(0), hint(1), decodeHint(ds.Shards[0]), decodeHint(ds.Shards[1]))
			// Two shards decoded at once come back in the other order; then
			// a small shard takes the first free buffer that fits, and the
			// big one after it must not find only a buffer too small.
			p := it.pool
			a, b := p.get(hint(0)), p.get(hint(1))
			p.put(b)
			p.put(a)
			p.get(hint(2))
			p.get(hint(3))
			assert.Equal(t, tc.wantAllocs, p.allocs, "%d buffers allocated, want %d", p.allocs, tc.wantAllocs)
		})
	}
}
