package iterator

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
)

// aheadOpener records the shards opened ahead (Open, closed unread) apart
// from those read (OpenSource).
type aheadOpener struct {
	DirOpener
	mu           sync.Mutex
	ahead, reads []string
}

func (o *aheadOpener) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	o.mu.Lock()
	o.ahead = append(o.ahead, name)
	o.mu.Unlock()
	return o.DirOpener.Open(ctx, name)
}

func (o *aheadOpener) OpenSource(ctx context.Context, name string) (loader.Source, func() error, error) {
	o.mu.Lock()
	o.reads = append(o.reads, name)
	o.mu.Unlock()
	return o.DirOpener.OpenSource(ctx, name)
}

func (o *aheadOpener) seen() (ahead, reads []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ahead), slices.Clone(o.reads)
}

// With a consumer that stops after one sample, the shards opened ahead
// settle at exactly the CacheAhead next ones in the rank's order past the
// last read, and none beyond.
func TestCacheAheadOpensTheNextShardsInOrder(t *testing.T) {
	const ahead = 3
	ds := makeShardsCompressing(t, []int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, func(int) bool { return false })
	op := &aheadOpener{DirOpener: DirOpener{Root: ds.Root}}
	it, err := New(ds, Options{Workers: 1, Prefetch: 1, CacheAhead: ahead, Opener: op})
	require.NoError(t, err)
	defer it.Close()
	_, err = it.Next(context.Background())
	require.NoError(t, err)

	names := make([]string, len(ds.Shards))
	for i, s := range ds.Shards {
		names[i] = s.Name
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, reads := op.seen()
		r := len(reads)
		next := names[r:min(r+ahead, len(names))]
		if len(got) > 0 && slices.Equal(next, got[max(len(got)-len(next), 0):]) {
			assert.Subset(t, names[:min(r+ahead, len(names))], got, "nothing beyond %d ahead of %d reads", ahead, r)
			assert.True(t, slices.IsSortedFunc(got, func(a, b string) int { return slices.Index(names, a) - slices.Index(names, b) }), "in order: %v", got)
			assert.Equal(t, names[:r], reads)
			break
		}
		require.True(t, time.Now().Before(deadline), "opened ahead %v after reads %v", got, reads)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheAheadRefusesBadValues(t *testing.T) {
	ds := makeShards(t, []int{2, 2})
	for _, n := range []int{-1, MaxCacheAhead + 1} {
		_, err := New(ds, Options{CacheAhead: n})
		require.Error(t, err, "%d", n)
	}
}

// Samples are the same with and without opening ahead.
func TestCacheAheadKeepsTheSamples(t *testing.T) {
	ds := makeShards(t, []int{3, 5, 2, 4, 6})
	opts := Options{Epochs: 2, Seed: 7, Shuffle: true, ShuffleBytes: 1 << 10}
	plain, _ := collect(t, ds, opts, nil, -1)
	opts.CacheAhead = 2
	ahead, _ := collect(t, ds, opts, nil, -1)
	assert.Equal(t, keysOf(plain), keysOf(ahead))
}
