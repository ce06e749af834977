package iterator

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
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
		if err != nil || p.live != 1 {
			t.Fatalf("first buffer: %v, %d live", err, p.live)
		}
		done := wait(p, ctx, never)
		p.put(first)
		r := <-done
		if r.err != nil || &r.buf[:1][0] != &first[:1][0] {
			t.Fatalf("got %v (same buffer: %v), want the buffer put back", r.err, r.err == nil && &r.buf[:1][0] == &first[:1][0])
		}
		if p.live != 1 {
			t.Fatalf("%d buffers live, want 1: the caller allocated past its limit instead of waiting", p.live)
		}
	})

	t.Run("allocates when grow allows", func(t *testing.T) {
		p := &bufferPool{keep: 4}
		if _, err := p.getWait(ctx, 1<<20, 1, never); err != nil {
			t.Fatal(err)
		}
		var allow atomic.Bool
		done := wait(p, ctx, allow.Load)
		allow.Store(true)
		p.wake()
		r := <-done
		if r.err != nil || len(r.buf) != 0 || cap(r.buf) < 1<<20 {
			t.Fatalf("got %d/%d bytes, %v", len(r.buf), cap(r.buf), r.err)
		}
		if p.live != 2 {
			t.Fatalf("%d buffers live, want 2", p.live)
		}
	})

	t.Run("gives up with the context", func(t *testing.T) {
		p := &bufferPool{keep: 4}
		if _, err := p.getWait(ctx, 1<<20, 1, never); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		done := wait(p, cctx, never)
		cancel()
		if r := <-done; !errors.Is(r.err, context.Canceled) || r.buf != nil {
			t.Fatalf("got %d bytes, %v; want context.Canceled", len(r.buf), r.err)
		}
		if p.live != 1 {
			t.Fatalf("%d buffers live after giving up, want 1", p.live)
		}
	})

	t.Run("counts buffers let go", func(t *testing.T) {
		p := &bufferPool{keep: 1}
		a, b := p.get(1<<20), p.get(1<<20)
		p.put(a)
		p.put(b) // beyond keep: dropped
		if p.live != 1 {
			t.Fatalf("%d live after dropping one of two, want 1", p.live)
		}
		p.get(4 << 20) // the free one is too small: dropped, a bigger one made
		if p.live != 1 || len(p.free) != 0 {
			t.Fatalf("%d live, %d free after replacing a small buffer, want 1 and 0", p.live, len(p.free))
		}
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
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var keys []string
		for s, err := range it.All(ctx) {
			if err != nil {
				t.Fatalf("workers %d, prefetch %d, after %d samples: %v", wp[0], wp[1], len(keys), err)
			}
			keys = append(keys, s.Key)
		}
		cancel()
		it.Close()
		if ref == nil {
			if want := 2 * (total(testCounts) + 1) / 2; len(keys) != want {
				t.Fatalf("%d samples in two epochs at world size 2, want %d", len(keys), want)
			}
			ref = keys
		} else if !slices.Equal(keys, ref) {
			t.Fatalf("workers %d, prefetch %d: %d samples, order differs from 1 worker's %d", wp[0], wp[1], len(keys), len(ref))
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
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			hint := func(i int) int64 { return it.bufferHint(ds.Shards[i]) }
			if (hint(0) == hint(1)) != tc.wantSame || hint(1) != decodeHint(ds.Shards[1]) {
				t.Fatalf("hints %d and %d (own %d and %d)", hint(0), hint(1), decodeHint(ds.Shards[0]), decodeHint(ds.Shards[1]))
			}
			// Two shards decoded at once come back in the other order; then
			// a small shard takes the first free buffer that fits, and the
			// big one after it must not find only a buffer too small.
			p := it.pool
			a, b := p.get(hint(0)), p.get(hint(1))
			p.put(b)
			p.put(a)
			p.get(hint(2))
			p.get(hint(3))
			if p.allocs != tc.wantAllocs {
				t.Errorf("%d buffers allocated, want %d", p.allocs, tc.wantAllocs)
			}
		})
	}
}
