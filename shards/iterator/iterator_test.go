package iterator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gdsload/gdsload/internal/uring"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(uring.Reaper))
}

// Uneven shards, an empty one, and a prime total (N = 241).
var testCounts = []int{17, 30, 0, 25, 1, 40, 19, 23, 31, 12, 20, 3}

func total(counts []int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func TestRanksEqualCountsAndCoverDataset(t *testing.T) {
	ds := makeShards(t, testCounts)
	n := total(testCounts)
	for world := 1; world <= 8; world++ {
		for _, drop := range []bool{false, true} {
			for _, parts := range []int{world, 8} {
				name := fmt.Sprintf("W%d/P%d/drop=%v", world, parts, drop)
				opts := Options{Partitions: parts, Seed: 7, Shuffle: true, ShuffleBytes: 300, DropRemainder: drop}
				perRank, _ := allRanks(t, ds, opts, world, nil, 0)
				want := (n + world - 1) / world
				if drop {
					want = n / world
				}
				seen := map[string]int{}
				padding := 0
				for r, rs := range perRank {
					require.Len(t, rs, want, "%s: rank %d yields %d samples, want %d", name, r, len(rs), want)
					for _, s := range rs {
						if s.Padding {
							padding++
							continue
						}
						seen[s.Key]++
					}
				}
				wantPad := want*world - n
				if drop {
					wantPad = 0
				}
				require.Equal(t, wantPad, padding, "%s: %d padding samples, want %d", name, padding, wantPad)
				for k, c := range seen {
					require.Equal(t, 1, c, "%s: sample %s yielded %d times", name, k, c)
				}
				wantSeen := want*world - wantPad
				require.Len(t, seen, wantSeen, "%s: %d distinct samples, want %d", name, len(seen), wantSeen)
			}
		}
	}
}

func TestOrderIndependentOfWorldSize(t *testing.T) {
	ds := makeShards(t, testCounts)
	n := total(testCounts)
	for _, parts := range []int{1, 4, 6} {
		opts := Options{Partitions: parts, Seed: 3, Shuffle: true, ShuffleBytes: 200}
		ref, _ := collect(t, ds, opts, nil, 0)
		refKeys := keysOf(ref)
		require.Len(t, refKeys, n, "P=%d: world 1 yields %d samples, want %d", parts, len(refKeys), n)
		for world := 2; world <= 8; world++ {
			perRank, _ := allRanks(t, ds, opts, world, nil, 0)
			got := merge(perRank)[:n]
			require.Equal(t, refKeys, got, "P=%d W=%d: global order differs from world size 1", parts, world)
		}
	}
}

func TestSeedsAndEpochsChangeTheOrder(t *testing.T) {
	ds := makeShards(t, testCounts)
	orders := map[string][]string{}
	for _, seed := range []uint64{1, 2} {
		opts := Options{Partitions: 2, Seed: seed, Shuffle: true, ShuffleBytes: 500, Epochs: 2}
		all, _ := collect(t, ds, opts, nil, 0)
		n := total(testCounts)
		orders[fmt.Sprintf("seed%d/epoch0", seed)] = keysOf(all[:n])
		orders[fmt.Sprintf("seed%d/epoch1", seed)] = keysOf(all[n:])
	}
	ref := slices.Sorted(slices.Values(orders["seed1/epoch0"]))
	for name, o := range orders {
		got := slices.Sorted(slices.Values(o))
		require.True(t, slices.Equal(got, ref), "%s is not a permutation of the dataset", name)
		for other, p := range orders {
			require.False(t, other < name && slices.Equal(o, p), "%s and %s give the same order", name, other)
		}
	}
	// Same inputs, same order.
	again, _ := collect(t, ds, Options{Partitions: 2, Seed: 1, Shuffle: true, ShuffleBytes: 500}, nil, 0)
	require.True(t, slices.Equal(keysOf(again), orders["seed1/epoch0"]), "the same seed and epoch gave a different order")
}

func TestResumeAtRandomPointsAndWorldSizes(t *testing.T) {
	ds := makeShards(t, testCounts)
	n := total(testCounts)
	rnd := rand.New(rand.NewPCG(1, 2))
	base := Options{Partitions: 6, Seed: 11, Shuffle: true, ShuffleBytes: 250, Epochs: 2}
	ref, _ := collect(t, ds, base, nil, 0)
	refKeys := keysOf(ref) // both epochs at world size 1
	fresh, err := New(ds, base)
	require.NoError(t, err)
	start := fresh.State()
	fresh.Close()
	for trial := range 16 {
		w1, w2 := 1+rnd.IntN(8), 1+rnd.IntN(8)
		epoch := int64(trial % 2)
		steps := 1 + rnd.IntN((n+w1-1)/w1-1) // per rank, before the stop; never the whole epoch
		s0 := start
		s0.Epoch = epoch
		o1 := base
		o1.Epochs = epoch + 1
		first, states := allRanks(t, ds, o1, w1, &s0, steps)
		for r := range states {
			require.Equal(t, states[0], states[r], "trial %d: rank %d state %+v differs from rank 0's %+v", trial, r, states[r], states[0])
		}
		st := states[0]
		require.Equal(t, epoch, st.Epoch, "trial %d: state %+v after %d steps of %d ranks, want epoch %d consumed %d", trial, st, steps, w1, epoch, steps*w1)
		require.Equal(t, int64(steps*w1), st.Consumed, "trial %d: state %+v after %d steps of %d ranks, want epoch %d consumed %d", trial, st, steps, w1, epoch, steps*w1)
		// Resume at another world size; Restore must override these.
		o2 := Options{Partitions: 1, Seed: 999, Shuffle: false, Epochs: epoch + 1}
		second, _ := allRanks(t, ds, o2, w2, &st, 0)
		for r := range second {
			require.Len(t, second[r], len(second[0]), "trial %d: after resuming, rank %d yields %d samples, rank 0 %d", trial, r, len(second[r]), len(second[0]))
		}
		got := append(merge(first), merge(second)[:n-int(st.Consumed)]...)
		want := refKeys[int(epoch)*n : int(epoch+1)*n]
		require.True(t, slices.Equal(got, want), "trial %d (W %d -> %d, epoch %d, stop at %d): resumed order differs\n got %v\nwant %v", trial, w1, w2, epoch, st.Consumed, got, want)
	}
}

func TestRestoreRefusesOtherDataset(t *testing.T) {
	a := makeShards(t, []int{3, 4})
	b := makeShards(t, []int{3, 5})
	it, err := New(a, Options{})
	require.NoError(t, err)
	st := it.State()
	it.Close()
	other, err := New(b, Options{})
	require.NoError(t, err)
	defer other.Close()
	err = other.Restore(st)
	require.ErrorIs(t, err, ErrOtherDataset, "Restore on another dataset: %v, want ErrOtherDataset", err)
	st.Fingerprint = b.Fingerprint()
	st.Consumed = 8
	err = other.Restore(st)
	require.Error(t, err, "Restore accepted a position past the end of the dataset")
}

func TestStateAtEpochEnd(t *testing.T) {
	ds := makeShards(t, []int{5, 6})
	samples, st := collect(t, ds, Options{WorldSize: 3, Rank: 1, Epochs: 2}, nil, 4)
	require.Len(t, samples, 4, "after a full epoch (4 of 11 samples at world 3): %d samples, state %+v; want epoch 1, consumed 0", len(samples), st)
	require.EqualValues(t, 1, st.Epoch, "after a full epoch (4 of 11 samples at world 3): %d samples, state %+v; want epoch 1, consumed 0", len(samples), st)
	require.Zero(t, st.Consumed, "after a full epoch (4 of 11 samples at world 3): %d samples, state %+v; want epoch 1, consumed 0", len(samples), st)
	require.EqualValues(t, 10, samples[3].Position, "rank 1's last sample is at %d (padding %v), want 10, not padding", samples[3].Position, samples[3].Padding)
	require.False(t, samples[3].Padding, "rank 1's last sample is at %d (padding %v), want 10, not padding", samples[3].Position, samples[3].Padding)
	samples, _ = collect(t, ds, Options{WorldSize: 3, Rank: 2}, nil, 0)
	require.Len(t, samples, 4, "rank 2: want 4 samples, the last wrapping to position 0")
	require.Zero(t, samples[3].Position, "rank 2: last at %d (padding %v); want 4, the last wrapping to position 0", samples[3].Position, samples[3].Padding)
	require.True(t, samples[3].Padding, "rank 2: last at %d (padding %v); want 4, the last wrapping to position 0", samples[3].Position, samples[3].Padding)
}
