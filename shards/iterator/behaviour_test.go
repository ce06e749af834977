package iterator

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestShuffleWindowsStayWithinBudget(t *testing.T) {
	ds := makeShards(t, []int{10, 10, 10, 10, 10, 10})
	per := ds.Shards[0].memBytes()
	for i, s := range ds.Shards {
		require.Equal(t, per, s.memBytes(), "shard %d holds %d sample bytes, shard 0 %d; the test needs equal shards", i, s.memBytes(), per)
	}
	// A budget of two shards: positions [20j, 20j+20) come from exactly two
	// shards, shuffled among themselves.
	got, _ := collect(t, ds, Options{Shuffle: true, Seed: 5, ShuffleBytes: 2 * per}, nil, 0)
	shuffled := false
	for w := 0; w < 3; w++ {
		block := got[20*w : 20*w+20]
		shards := map[string]bool{}
		for j, s := range block {
			shards[s.Shard] = true
			if j > 0 && s.Shard == block[j-1].Shard && s.Index < block[j-1].Index {
				shuffled = true
			}
		}
		require.Len(t, shards, 2, "window %d mixes %d shards, budget allows 2", w, len(shards))
	}
	require.True(t, shuffled, "samples within windows kept shard order")
	// Budget 0: shards permuted, samples in order.
	got, _ = collect(t, ds, Options{Shuffle: true, Seed: 5}, nil, 0)
	for j := 1; j < len(got); j++ {
		require.False(t, got[j].Shard == got[j-1].Shard && got[j].Index != got[j-1].Index+1, "without a shuffle window, sample %d of %s follows %d", got[j].Index, got[j].Shard, got[j-1].Index)
	}
}

// countingOpener counts opens and can fail or block.
type countingOpener struct {
	inner ShardOpener
	mu    sync.Mutex
	opens int
}

func (c *countingOpener) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	c.mu.Lock()
	c.opens++
	c.mu.Unlock()
	return c.inner.Open(ctx, name)
}

func (c *countingOpener) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens
}

func TestPrefetchIsBounded(t *testing.T) {
	ds := makeShards(t, []int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4})
	for _, prefetch := range []int{1, 3} {
		op := &countingOpener{inner: DirOpener{Root: ds.Root}}
		it, err := New(ds, Options{Prefetch: prefetch, Workers: 2, Opener: op})
		require.NoError(t, err)
		_, err = it.Next(context.Background())
		require.NoError(t, err)
		// One shard taken by the consumer, prefetch more in flight: wait
		// (with a deadline, not a fixed sleep) until prefetch has read
		// ahead, then check it went no further.
		for deadline := time.Now().Add(10 * time.Second); op.count() < 1+prefetch; time.Sleep(time.Millisecond) {
			require.False(t, time.Now().After(deadline), "prefetch %d: only %d shards opened after 10 s; prefetch is not reading ahead", prefetch, op.count())
		}
		got := op.count()
		assert.LessOrEqual(t, got, 1+prefetch, "prefetch %d: %d shards opened while the consumer holds the first", prefetch, got)
		it.Close()
	}
}

// Prefetch runs on into the next epoch: while the consumer still holds
// the last sample of an epoch, the next epoch's first shards are being
// read, so workers do not wait at epoch boundaries. After the run's last
// epoch nothing more is read.
func TestPrefetchCrossesEpochs(t *testing.T) {
	ds := makeShards(t, []int{4, 4, 4})
	for _, tt := range []struct {
		epochs   int64
		wantMore bool // shards of a next epoch opened after the first
	}{{2, true}, {1, false}} {
		op := &countingOpener{inner: DirOpener{Root: ds.Root}}
		it, err := New(ds, Options{Prefetch: 2, Workers: 1, Epochs: tt.epochs, Opener: op})
		require.NoError(t, err)
		for range 12 { // all of epoch 0; the next Next call would cross
			_, err := it.Next(context.Background())
			require.NoError(t, err)
		}
		if tt.wantMore {
			for deadline := time.Now().Add(10 * time.Second); op.count() < 3+2; time.Sleep(time.Millisecond) {
				require.False(t, time.Now().After(deadline), "%d shards opened 10 s after the consumer took epoch 0's last sample; want epoch 1's first 2 read ahead", op.count())
			}
		}
		got, limit := op.count(), 3+2
		assert.LessOrEqual(t, got, limit, "epochs %d: %d shards opened at the end of epoch 0", tt.epochs, got)
		assert.False(t, !tt.wantMore && got != 3, "epochs %d: %d shards opened at the end of epoch 0", tt.epochs, got)
		it.Close()
	}
}

func TestCorruptAndStaleShardsAreNamed(t *testing.T) {
	ds := makeShards(t, []int{5, 5, 5})
	manifested := withManifest(t, ds)
	p := filepath.Join(ds.Root, ds.Shards[1].Name)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	// Stale manifest: the dataset claims more samples than shard 1 has.
	stale := &Dataset{Root: ds.Root, Shards: slices.Clone(ds.Shards)}
	stale.Shards[1].Samples = 7
	err = runToEnd(stale, Options{})
	require.Error(t, err, "stale sample count: %v, want an error naming %s", err, ds.Shards[1].Name)
	require.ErrorContains(t, err, ds.Shards[1].Name, "stale sample count: %v, want an error naming %s", err, ds.Shards[1].Name)
	// Flipped byte in a member header: decoding fails, naming the shard.
	bad := slices.Clone(data)
	bad[100] ^= 0x55
	require.NoError(t, os.WriteFile(p, bad, 0o644))
	// Opened from a manifest, the shard's digest catches it; opened by a
	// scan, which counted the plain tar from its headers and took no
	// digest, decoding does.
	err = runToEnd(manifested, Options{})
	require.ErrorIs(t, err, webdataset.ErrShardChecksum, "by default: %v, want ErrShardChecksum naming %s", err, ds.Shards[1].Name)
	require.ErrorContains(t, err, ds.Shards[1].Name, "by default: %v, want ErrShardChecksum naming %s", err, ds.Shards[1].Name)
	err = runToEnd(ds, Options{})
	require.Error(t, err, "scanned dataset: %v, want a decode error naming %s", err, ds.Shards[1].Name)
	require.ErrorContains(t, err, ds.Shards[1].Name, "scanned dataset: %v, want a decode error naming %s", err, ds.Shards[1].Name)
	err = runToEnd(ds, Options{SkipChecksum: true})
	require.Error(t, err, "with SkipChecksum: %v, want a decode error naming %s", err, ds.Shards[1].Name)
	require.ErrorContains(t, err, ds.Shards[1].Name, "with SkipChecksum: %v, want a decode error naming %s", err, ds.Shards[1].Name)
	// A shard whose size differs from the manifest's is refused even
	// without checksums.
	require.NoError(t, os.WriteFile(p, append(slices.Clone(data), make([]byte, 512)...), 0o644))
	err = runToEnd(ds, Options{SkipChecksum: true})
	require.ErrorIs(t, err, webdataset.ErrShardSize, "grown shard: %v, want ErrShardSize naming %s", err, ds.Shards[1].Name)
	require.ErrorContains(t, err, ds.Shards[1].Name, "grown shard: %v, want ErrShardSize naming %s", err, ds.Shards[1].Name)
}

// endless is a shard stream that never ends, as a broken or hostile
// storage server could send.
type endless struct{}

func (endless) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(zeroReader{}), nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A stream longer than the listed size, or than MaxShardBytes when no
// size is listed, fails as soon as it passes it instead of growing a
// buffer without bound.
func TestEndlessShardStreamIsBounded(t *testing.T) {
	ds := makeShards(t, []int{3})
	err := runToEnd(ds, Options{Opener: endless{}})
	assert.ErrorIs(t, err, webdataset.ErrShardSize, "listed size: %v, want ErrShardSize", err)
	unknown := &Dataset{Root: ds.Root, Shards: slices.Clone(ds.Shards)}
	unknown.Shards[0].Bytes, unknown.Shards[0].SampleBytes = 0, 0
	err = runToEnd(unknown, Options{Opener: endless{}, MaxShardBytes: 1 << 20})
	assert.Error(t, err, "no listed size: %v, want the MaxShardBytes bound", err)
	assert.ErrorContains(t, err, "larger than 2097152 bytes", "no listed size: %v, want the MaxShardBytes bound", err)
}

func runToEnd(ds *Dataset, opts Options) error {
	it, err := New(ds, opts)
	if err != nil {
		return err
	}
	defer it.Close()
	for {
		if _, err := it.Next(context.Background()); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func TestCancelAndCloseMidEpoch(t *testing.T) {
	ds := makeShards(t, []int{20, 20, 20, 20})
	opts := Options{Shuffle: true, Seed: 2, ShuffleBytes: 1 << 20, Workers: 2}
	ref, _ := collect(t, ds, opts, nil, 0)
	blocked := &blockingOpener{inner: DirOpener{Root: ds.Root}, release: make(chan struct{})}
	o := opts
	o.Opener = blocked
	it, err := New(ds, o)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = it.Next(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Next with a blocked opener: %v, want deadline exceeded", err)
	st := it.State()
	close(blocked.release)
	it.Close() // must not leak the prefetcher or workers (goleak checks)
	require.Zero(t, st.Consumed, "state after a failed first Next: %+v, want consumed 0", st)
	rest, _ := collect(t, ds, opts, &st, 0)
	require.True(t, slices.Equal(keysOf(rest), keysOf(ref)), "restoring after a cancelled Next changed the order")
	// Close in the middle of an epoch with prefetch in flight.
	it, err = New(ds, opts)
	require.NoError(t, err)
	for range 10 {
		_, err := it.Next(context.Background())
		require.NoError(t, err)
	}
	it.Close()
	_, err = it.Next(context.Background())
	require.Error(t, err, "Next after Close succeeded")
}

type blockingOpener struct {
	inner   ShardOpener
	release chan struct{}
}

func (b *blockingOpener) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.inner.Open(ctx, name)
}

func TestShardIterator(t *testing.T) {
	ds := makeShards(t, []int{3, 1, 4, 1, 5, 9, 2})
	m := len(ds.Shards)
	opts := Options{Shuffle: true, Seed: 4, Epochs: 1}
	var ref []string
	collectShards := func(o Options, st *State, limit int) ([]string, State) {
		it, err := NewShards(ds, o)
		require.NoError(t, err)
		defer it.Close()
		if st != nil {
			require.NoError(t, it.Restore(*st))
		}
		var names []string
		for limit <= 0 || len(names) < limit {
			sd, err := it.Next(context.Background())
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			want, _ := os.ReadFile(filepath.Join(ds.Root, sd.Name))
			require.True(t, slices.Equal(sd.Data, want), "shard %s: data differs from the file", sd.Name)
			names = append(names, sd.Name)
		}
		return names, it.State()
	}
	ref, _ = collectShards(opts, nil, 0)
	require.Len(t, ref, m, "%d shards, want %d", len(ref), m)
	for world := 2; world <= 4; world++ {
		per := make([][]*Sample, world)
		var st State
		for r := range world {
			o := opts
			o.Rank, o.WorldSize = r, world
			names, s := collectShards(o, nil, 1)
			st = s
			for _, n := range names {
				per[r] = append(per[r], &Sample{Key: n})
			}
		}
		// Resume everyone at world size 1 after one shard per rank.
		rest, _ := collectShards(Options{}, &st, 0)
		got := append(merge(per), rest...)
		require.True(t, slices.Equal(got, ref), "W=%d then 1: shard order %v, want %v", world, got, ref)
	}
	// A whole-shard state is refused by the sample iterator.
	_, st := collectShards(opts, nil, 2)
	it, _ := New(ds, opts)
	defer it.Close()
	err := it.Restore(st)
	require.ErrorIs(t, err, ErrOtherDataset, "sample iterator restoring a shard state")
}

func TestOpenSources(t *testing.T) {
	ds := makeShards(t, []int{2, 3, 4})
	fp := ds.Fingerprint()
	// The manifest's entries (streamed scan, SHA-256) give the dataset the
	// fingerprint of Open's own scan (in memory, CRC-32C only).
	m, err := webdataset.BuildManifest(context.Background(), ds.Root)
	require.NoError(t, err)
	for i, e := range m.Shards {
		wantCRC := e.CRC32C // compressed shards; plain ones are counted from their headers alone
		if !strings.HasSuffix(e.Name, ".zst") {
			wantCRC = ""
		}
		s := ds.Shards[i]
		assert.Equal(t, s.Name, e.Name, "manifest entry %+v, Open scanned %+v", e, s)
		assert.Equal(t, s.Bytes, e.Bytes, "manifest entry %+v, Open scanned %+v", e, s)
		assert.Equal(t, s.Samples, e.Samples, "manifest entry %+v, Open scanned %+v", e, s)
		assert.Equal(t, s.SampleBytes, e.SampleBytes, "manifest entry %+v, Open scanned %+v", e, s)
		assert.Equal(t, wantCRC, s.CRC32C, "manifest entry %+v, Open scanned %+v", e, s)
		assert.Empty(t, s.SHA256, "manifest entry %+v, Open scanned %+v", e, s)
	}
	require.NoError(t, webdataset.WriteManifest(context.Background(), ds.Root, m))
	ctx := context.Background()
	for _, src := range []string{ds.Root, filepath.Join(ds.Root, "index.json")} {
		got, err := Open(ctx, src)
		require.NoError(t, err)
		assert.Equal(t, fp, got.Fingerprint(), "Open(%s): fingerprint %s, %d samples; want %s, 9", src, got.Fingerprint(), got.Samples(), fp)
		assert.EqualValues(t, 9, got.Samples(), "Open(%s): fingerprint %s, %d samples; want %s, 9", src, got.Fingerprint(), got.Samples(), fp)
	}
	// shard-00.tar.zst does not exist: a pattern naming it must fail.
	got, err := Open(ctx, filepath.Join(ds.Root, "shard-{00..01}.tar{,.zst}"))
	require.Error(t, err, "pattern with a missing shard accepted: %+v", got)
	got, err = Open(ctx, filepath.Join(ds.Root, "shard-0{0,1}.tar"))
	require.NoError(t, err, "brace pattern: %+v, %v", got, err)
	require.Len(t, got.Shards, 2, "brace pattern: %+v, %v", got, err)
	require.Equal(t, "shard-01.tar", got.Shards[1].Name, "brace pattern: %+v, %v", got, err)
	require.Equal(t, ds.Root, got.Root, "brace pattern: %+v, %v", got, err)
	got, err = Open(ctx, filepath.Join(ds.Root, "shard-02.tar.zst"))
	require.NoError(t, err, "single zstd shard: %+v, %v", got, err)
	require.EqualValues(t, 4, got.Samples(), "single zstd shard: %+v, %v", got, err)
}

func TestPlacementFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	p, err := placementFrom(env(nil))
	require.NoError(t, err, "empty environment: %+v, %v", p, err)
	require.Equal(t, (Placement{Rank: 0, WorldSize: 1}), p, "empty environment: %+v, %v", p, err)
	p, err = placementFrom(env(map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}))
	require.NoError(t, err, "torchrun environment: %+v, %v", p, err)
	require.Equal(t, (Placement{Rank: 3, WorldSize: 8, LocalRank: 1}), p, "torchrun environment: %+v, %v", p, err)
	for _, bad := range []map[string]string{{"RANK": "x"}, {"WORLD_SIZE": "0"}, {"RANK": "4", "WORLD_SIZE": "4"}, {"LOCAL_RANK": "-1"}} {
		_, err := placementFrom(env(bad))
		assert.Error(t, err, "environment %v accepted", bad)
	}
}

// TestPlacementValidate: a world size given explicitly (a flag, say) must be
// at least 1 ("--world-size 0" once read everything as "rank 0/0").
func TestPlacementValidate(t *testing.T) {
	for _, tt := range []struct {
		p  Placement
		ok bool
	}{
		{Placement{Rank: 0, WorldSize: 1}, true},
		{Placement{Rank: 7, WorldSize: 8, LocalRank: 3}, true},
		{Placement{Rank: 0, WorldSize: 0}, false},
		{Placement{Rank: 0, WorldSize: -1}, false},
		{Placement{Rank: 2, WorldSize: 2}, false},
		{Placement{Rank: -1, WorldSize: 2}, false},
		{Placement{Rank: 0, WorldSize: 1, LocalRank: -1}, false},
		{Placement{Rank: 0, WorldSize: MaxPartitions + 1}, false},
	} {
		err := tt.p.Validate()
		assert.Equal(t, tt.ok, (err == nil), "%+v: Validate() = %v, want ok=%v", tt.p, err, tt.ok)
	}
}

func TestEdgeCases(t *testing.T) {
	// More partitions than samples, and more ranks than samples.
	ds := makeShards(t, []int{2, 0, 3})
	ref, _ := collect(t, ds, Options{Partitions: 16, Shuffle: true, Seed: 1, ShuffleBytes: 64}, nil, 0)
	require.Len(t, ref, 5, "P=16 over 5 samples: %d samples", len(ref))
	perRank, _ := allRanks(t, ds, Options{Partitions: 16, Shuffle: true, Seed: 1, ShuffleBytes: 64}, 7, nil, 0)
	for r, rs := range perRank {
		require.Len(t, rs, 1, "world 7 over 5 samples: rank %d yields %d, want 1", r, len(rs))
	}
	got := merge(perRank)[:5]
	require.True(t, slices.Equal(got, keysOf(ref)), "world 7: order %v, want %v", got, keysOf(ref))
	perRank, _ = allRanks(t, ds, Options{DropRemainder: true}, 7, nil, 0)
	for r, rs := range perRank {
		require.Empty(t, rs, "world 7 dropping the remainder of 5 samples: rank %d yields %d", r, len(rs))
	}
	// Counts that would need an entry per partition beyond any real job
	// are refused, from options and from a state file alike.
	for _, o := range []Options{{Partitions: MaxPartitions + 1}, {WorldSize: 1 << 40}} {
		_, err := New(ds, o)
		assert.Error(t, err, "New with %+v: %v", o, err)
		assert.ErrorContains(t, err, "at most", "New with %+v: %v", o, err)
	}
	it, err := New(ds, Options{})
	require.NoError(t, err)
	st := it.State()
	st.Partitions = 1 << 40
	err = it.Restore(st)
	assert.Error(t, err, "a state with 2^40 partitions was restored")
	it.Close()
	// A damaged manifest's counts are refused before they size anything.
	for _, bad := range []func(*Shard){
		func(s *Shard) { s.Samples = 1 << 40 },
		func(s *Shard) { s.SampleBytes = 1 << 50 },
		func(s *Shard) { s.Bytes = 1 << 50 },
	} {
		hostile := *ds
		hostile.Shards = slices.Clone(ds.Shards)
		bad(&hostile.Shards[0])
		_, err := New(&hostile, Options{})
		assert.ErrorIs(t, err, ErrImpossibleShard, "shard %+v: %v", hostile.Shards[0], err)
		assert.ErrorContains(t, err, "rewrite the manifest", "shard %+v: %v", hostile.Shards[0], err)
	}
	// No samples at all.
	empty := makeShards(t, []int{0, 0})
	samples, state := collect(t, empty, Options{Epochs: 3}, nil, 0)
	require.Empty(t, samples, "empty dataset: %d samples, state %+v", len(samples), state)
	require.EqualValues(t, 3, state.Epoch, "empty dataset: %d samples, state %+v", len(samples), state)
}

func TestWorkersAndPrefetchDoNotChangeTheOrder(t *testing.T) {
	ds := makeShards(t, testCounts)
	base := Options{WorldSize: 3, Rank: 1, Partitions: 6, Shuffle: true, Seed: 9, ShuffleBytes: 400}
	ref, _ := collect(t, ds, base, nil, 0)
	for _, wp := range [][2]int{{2, 1}, {3, 8}, {4, 2}} {
		o := base
		o.Workers, o.Prefetch = wp[0], wp[1]
		got, _ := collect(t, ds, o, nil, 0)
		require.True(t, slices.Equal(keysOf(got), keysOf(ref)), "workers %d, prefetch %d: order differs from 1 worker", wp[0], wp[1])
	}
}

func TestDirOpenerStaysInRoot(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(filepath.Dir(root), "outside.tar")
	require.NoError(t, os.WriteFile(outside, []byte("x"), 0o644))
	defer os.Remove(outside)
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link.tar")))
	op := DirOpener{Root: root}
	for _, name := range []string{"../outside.tar", "/etc/passwd", "link.tar"} {
		rc, err := op.Open(context.Background(), name)
		if !assert.Error(t, err, "DirOpener opened %q outside its root", name) {
			rc.Close()
		}
	}
}

// Shards of nearly the same size reuse one pooled buffer: requests round up
// to eight sizes per power of two, never below the request and at most
// 12.5% above it.
func TestBufferPoolReusesNearSizes(t *testing.T) {
	for _, n := range []int64{1, 4096, 64 << 10, 64<<10 + 1, 6315171, 18945513, 1 << 30, 1<<30 + 1} {
		got := poolSize(n)
		assert.GreaterOrEqual(t, got, n, "poolSize(%d) = %d", n, got)
		assert.False(t, n > 64<<10 && float64(got) > float64(n)*1.125, "poolSize(%d) = %d", n, got)
	}
	p := &bufferPool{keep: 2}
	b := p.get(18945513)
	p.put(b)
	again := p.get(18991113)
	assert.Same(t, &b[:1][0], &again[:1][0], "a shard 45 KB larger did not reuse the pooled buffer")
}

// A FIFO named as the source is refused at once instead of blocking.
func TestOpenRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "shard.tar")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(context.Background(), p); done <- err }()
	select {
	case err := <-done:
		assert.Error(t, err, "Open(FIFO) = %v", err)
		assert.ErrorContains(t, err, "neither a directory nor a regular file", "Open(FIFO) = %v", err)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Open(FIFO) blocked")
	}
}

// TestNonUTF8ShardNamesIterate: a dataset whose shard names are not UTF-8
// iterates through its index.json (once the manifest named
// "s-\ufffd01.tar" and iterate failed with "no such file").
func TestNonUTF8ShardNamesIterate(t *testing.T) {
	ds := makeShards(t, []int{3, 4})
	for i, s := range ds.Shards {
		name := fmt.Sprintf("s-\xff%02d\xe9.tar", i)
		if err := os.Rename(filepath.Join(ds.Root, s.Name), filepath.Join(ds.Root, name)); err != nil {
			t.Skipf("this file system refuses the name %q: %v", name, err)
		}
	}
	ctx := context.Background()
	m, err := webdataset.BuildManifest(ctx, ds.Root)
	require.NoError(t, err)
	require.NoError(t, webdataset.WriteManifest(ctx, ds.Root, m))
	got, err := Open(ctx, ds.Root)
	require.NoError(t, err)
	require.Equal(t, "s-\xff00\xe9.tar", got.Shards[0].Name, "shard name %q read back from index.json", got.Shards[0].Name)
	samples, _ := collect(t, got, Options{}, nil, 0)
	require.Len(t, samples, 7, "%d samples, the first from %q; want 7", len(samples), samples[0].Shard)
	require.Equal(t, got.Shards[0].Name, samples[0].Shard, "%d samples, the first from %q; want 7", len(samples), samples[0].Shard)
	// A manifest from before, with U+FFFD in place of the bytes, fails with
	// a hint at the cause.
	old := *m
	old.Shards = slices.Clone(m.Shards)
	for i := range old.Shards {
		old.Shards[i].Name = strings.ToValidUTF8(old.Shards[i].Name, "\ufffd")
	}
	require.NoError(t, webdataset.WriteManifest(ctx, ds.Root, &old))
	mangled, err := Open(ctx, ds.Root)
	require.NoError(t, err)
	it, err := New(mangled, Options{})
	require.NoError(t, err)
	defer it.Close()
	_, err = it.Next(ctx)
	require.Error(t, err, "mangled manifest: %v, want an error that explains the U+FFFD", err)
	require.ErrorContains(t, err, "U+FFFD", "mangled manifest: %v, want an error that explains the U+FFFD", err)
}
