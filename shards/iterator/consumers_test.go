package iterator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundRobin interleaves consumer streams one sample at a time within each
// epoch, as a DataLoader with batch size 1 takes them.
func roundRobin(streams [][]*Sample, epochs int64) []string {
	var out []string
	for e := range epochs {
		var cur [][]*Sample
		for _, s := range streams {
			cur = append(cur, slices.DeleteFunc(slices.Clone(s), func(x *Sample) bool { return x.Epoch != e }))
		}
		out = append(out, merge(cur)...)
	}
	return out
}

func TestConsumersSplitTheRankExactly(t *testing.T) {
	ds := makeShards(t, testCounts)
	for _, tc := range []struct {
		world, consumers int
		drop             bool
	}{
		{1, 2, false}, {1, 3, false}, {2, 2, false}, {3, 4, true}, {2, 5, false}, {4, 3, true}, {1, 300, false},
	} {
		t.Run(fmt.Sprintf("world%d-consumers%d-drop%v", tc.world, tc.consumers, tc.drop), func(t *testing.T) {
			base := Options{Partitions: 6, Seed: 3, Shuffle: true, ShuffleBytes: 300, Epochs: 2, DropRemainder: tc.drop, WorldSize: tc.world}
			for r := range tc.world {
				o := base
				o.Rank = r
				want, _ := collect(t, ds, o, nil, 0)
				streams := make([][]*Sample, tc.consumers)
				for c := range tc.consumers {
					oc := o
					oc.Consumer, oc.Consumers = c, tc.consumers
					streams[c], _ = collect(t, ds, oc, nil, 0)
					// Per epoch, consumers' counts differ by at most one.
					d := len(streams[0]) - len(streams[c])
					require.GreaterOrEqual(t, d, 0, "rank %d: consumer %d yields %d samples over %d epochs, consumer 0 %d", r, c, len(streams[c]), base.Epochs, len(streams[0]))
					require.LessOrEqual(t, d, int(base.Epochs), "rank %d: consumer %d yields %d samples over %d epochs, consumer 0 %d", r, c, len(streams[c]), base.Epochs, len(streams[0]))
				}
				got := roundRobin(streams, base.Epochs)
				require.True(t, slices.Equal(got, keysOf(want)), "rank %d: consumers taken in turn yield\n%v\nthe rank alone\n%v", r, got, keysOf(want))
			}
		})
	}
}

func TestConsumerStateAndSkipResume(t *testing.T) {
	ds := makeShards(t, testCounts)
	rnd := rand.New(rand.NewPCG(5, 6))
	for trial := range 8 {
		world, consumers := 1+rnd.IntN(3), 1+rnd.IntN(4)
		o := Options{Partitions: 4, Seed: 9, Shuffle: true, ShuffleBytes: 200, Epochs: 2,
			WorldSize: world, Rank: rnd.IntN(world), Consumers: consumers, Consumer: rnd.IntN(consumers)}
		want, _ := collect(t, ds, o, nil, 0)
		stop := rnd.IntN(len(want))
		// The consumer's own state resumes it.
		first, st := collect(t, ds, o, nil, stop)
		second, _ := collect(t, ds, o, &st, 0)
		got := append(keysOf(first), keysOf(second)...)
		require.True(t, slices.Equal(got, keysOf(want)), "trial %d (%+v, stop %d): state resume differs\n got %v\nwant %v", trial, o, stop, got, keysOf(want))
		// So does skipping from the start.
		it, err := New(ds, o)
		require.NoError(t, err)
		require.NoError(t, it.Skip(int64(stop)))
		skipped := it.State()
		it.Close()
		require.Equal(t, st, skipped, "trial %d: state after skipping %d is %+v, after reading them %+v", trial, stop, skipped, st)
	}
}

func TestConsumerOptionsAreChecked(t *testing.T) {
	ds := makeShards(t, []int{3})
	for _, o := range []Options{
		{Consumer: 1},
		{Consumer: 2, Consumers: 2},
		{Consumer: -1, Consumers: 2},
		{Consumers: -1},
		{Consumers: MaxPartitions, WorldSize: 2},
	} {
		_, err := New(ds, o)
		assert.Error(t, err, "New accepted consumer %d of %d (world %d)", o.Consumer, o.Consumers, o.WorldSize)
	}
	it, err := New(ds, Options{})
	require.NoError(t, err)
	defer it.Close()
	err = it.Skip(-1)
	assert.Error(t, err, "Skip(-1) accepted")
}
