package iterator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gdsload/gdsload/internal/uring"
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
					if len(rs) != want {
						t.Fatalf("%s: rank %d yields %d samples, want %d", name, r, len(rs), want)
					}
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
				if padding != wantPad {
					t.Fatalf("%s: %d padding samples, want %d", name, padding, wantPad)
				}
				for k, c := range seen {
					if c != 1 {
						t.Fatalf("%s: sample %s yielded %d times", name, k, c)
					}
				}
				if wantSeen := want*world - wantPad; len(seen) != wantSeen {
					t.Fatalf("%s: %d distinct samples, want %d", name, len(seen), wantSeen)
				}
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
		if len(refKeys) != n {
			t.Fatalf("P=%d: world 1 yields %d samples, want %d", parts, len(refKeys), n)
		}
		for world := 2; world <= 8; world++ {
			perRank, _ := allRanks(t, ds, opts, world, nil, 0)
			got := merge(perRank)[:n]
			if !slices.Equal(got, refKeys) {
				t.Fatalf("P=%d W=%d: global order differs from world size 1\n got %v\nwant %v", parts, world, got[:20], refKeys[:20])
			}
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
		if got := slices.Sorted(slices.Values(o)); !slices.Equal(got, ref) {
			t.Fatalf("%s is not a permutation of the dataset", name)
		}
		for other, p := range orders {
			if other < name && slices.Equal(o, p) {
				t.Fatalf("%s and %s give the same order", name, other)
			}
		}
	}
	// Same inputs, same order.
	again, _ := collect(t, ds, Options{Partitions: 2, Seed: 1, Shuffle: true, ShuffleBytes: 500}, nil, 0)
	if !slices.Equal(keysOf(again), orders["seed1/epoch0"]) {
		t.Fatal("the same seed and epoch gave a different order")
	}
}

func TestResumeAtRandomPointsAndWorldSizes(t *testing.T) {
	ds := makeShards(t, testCounts)
	n := total(testCounts)
	rnd := rand.New(rand.NewPCG(1, 2))
	base := Options{Partitions: 6, Seed: 11, Shuffle: true, ShuffleBytes: 250, Epochs: 2}
	ref, _ := collect(t, ds, base, nil, 0)
	refKeys := keysOf(ref) // both epochs at world size 1
	fresh, err := New(ds, base)
	if err != nil {
		t.Fatal(err)
	}
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
			if states[r] != states[0] {
				t.Fatalf("trial %d: rank %d state %+v differs from rank 0's %+v", trial, r, states[r], states[0])
			}
		}
		st := states[0]
		if st.Epoch != epoch || st.Consumed != int64(steps*w1) {
			t.Fatalf("trial %d: state %+v after %d steps of %d ranks, want epoch %d consumed %d", trial, st, steps, w1, epoch, steps*w1)
		}
		// Resume at another world size; Restore must override these.
		o2 := Options{Partitions: 1, Seed: 999, Shuffle: false, Epochs: epoch + 1}
		second, _ := allRanks(t, ds, o2, w2, &st, 0)
		for r := range second {
			if len(second[r]) != len(second[0]) {
				t.Fatalf("trial %d: after resuming, rank %d yields %d samples, rank 0 %d", trial, r, len(second[r]), len(second[0]))
			}
		}
		got := append(merge(first), merge(second)[:n-int(st.Consumed)]...)
		want := refKeys[int(epoch)*n : int(epoch+1)*n]
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (W %d -> %d, epoch %d, stop at %d): resumed order differs\n got %v\nwant %v", trial, w1, w2, epoch, st.Consumed, got, want)
		}
	}
}

func TestRestoreRefusesOtherDataset(t *testing.T) {
	a := makeShards(t, []int{3, 4})
	b := makeShards(t, []int{3, 5})
	it, err := New(a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := it.State()
	it.Close()
	other, err := New(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Restore(st); !errors.Is(err, ErrOtherDataset) {
		t.Fatalf("Restore on another dataset: %v, want ErrOtherDataset", err)
	}
	st.Fingerprint = b.Fingerprint()
	st.Consumed = 8
	if err := other.Restore(st); err == nil {
		t.Fatal("Restore accepted a position past the end of the dataset")
	}
}

func TestStateAtEpochEnd(t *testing.T) {
	ds := makeShards(t, []int{5, 6})
	samples, st := collect(t, ds, Options{WorldSize: 3, Rank: 1, Epochs: 2}, nil, 4)
	if len(samples) != 4 || st.Epoch != 1 || st.Consumed != 0 {
		t.Fatalf("after a full epoch (4 of 11 samples at world 3): %d samples, state %+v; want epoch 1, consumed 0", len(samples), st)
	}
	if samples[3].Position != 10 || samples[3].Padding {
		t.Fatalf("rank 1's last sample is at %d (padding %v), want 10, not padding", samples[3].Position, samples[3].Padding)
	}
	samples, _ = collect(t, ds, Options{WorldSize: 3, Rank: 2}, nil, 0)
	if len(samples) != 4 || samples[3].Position != 0 || !samples[3].Padding {
		t.Fatalf("rank 2: %d samples, last at %d (padding %v); want 4, the last wrapping to position 0", len(samples), samples[3].Position, samples[3].Padding)
	}
}
