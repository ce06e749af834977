package iterator

import (
	"errors"
	"fmt"
)

// ErrOtherDataset reports a State taken on a different dataset.
var ErrOtherDataset = errors.New("state belongs to another dataset")

// State is the position of a run, small enough to store with every
// checkpoint. Consumed counts global positions of the epoch order already
// taken by all ranks together; it means the same at any world size, which
// is what lets a run resume on a different number of ranks. The other
// fields fix the order and are adopted by Restore.
type State struct {
	Fingerprint      string `json:"fingerprint"`
	Seed             uint64 `json:"seed"`
	Epoch            int64  `json:"epoch"`
	Consumed         int64  `json:"consumed"`
	Partitions       int    `json:"partitions"`
	WorldSizeAtStart int    `json:"world_size_at_start"`
	Shuffle          bool   `json:"shuffle"`
	ShuffleBytes     int64  `json:"shuffle_bytes"`
	DropRemainder    bool   `json:"drop_remainder"`
}

// Restore moves a fresh iterator (no Next call yet) to st. The dataset must
// be the one st was taken on (else ErrOtherDataset). Restore adopts the
// state's order (seed, partitions, shuffle settings, remainder policy) so
// the run continues the same order; rank and world size stay the
// iterator's own, and may differ from those of the run that saved st.
func (it *Iterator) Restore(st State) error {
	if it.started {
		return errors.New("Restore after Next; restore a fresh iterator")
	}
	if fp := it.ds.Fingerprint(); st.Fingerprint != fp {
		return fmt.Errorf("%w: state fingerprint %s, dataset %s (%d shards in %s)", ErrOtherDataset, st.Fingerprint, fp, len(it.ds.Shards), it.ds.Root)
	}
	n := it.ds.Samples()
	switch {
	case st.Partitions < 1 || st.Partitions > MaxPartitions:
		return fmt.Errorf("state has %d partitions, want 1 to %d", st.Partitions, MaxPartitions)
	case st.Epoch < 0 || st.Consumed < 0 || (n > 0 && st.Consumed >= n):
		return fmt.Errorf("state position epoch %d, consumed %d is outside the dataset's %d samples", st.Epoch, st.Consumed, n)
	case st.ShuffleBytes < 0:
		return fmt.Errorf("state has negative shuffle_bytes %d", st.ShuffleBytes)
	}
	it.ord = order{seed: st.Seed, partitions: st.Partitions, shuffle: st.Shuffle, windowBytes: st.ShuffleBytes}
	it.opts.DropRemainder = st.DropRemainder
	it.worldAtStart = st.WorldSizeAtStart
	it.epoch, it.start = st.Epoch, st.Consumed
	return nil
}

// State returns the run's position after the samples returned so far.
// Ranks step in lockstep, so every rank returns the same State after the
// same number of Next calls; save any one of them.
func (it *Iterator) State() State {
	st := State{
		Fingerprint:      it.ds.Fingerprint(),
		Seed:             it.ord.seed,
		Epoch:            it.epoch,
		Consumed:         it.start,
		Partitions:       it.ord.partitions,
		WorldSizeAtStart: it.worldAtStart,
		Shuffle:          it.ord.shuffle,
		ShuffleBytes:     it.ord.windowBytes,
		DropRemainder:    it.opts.DropRemainder,
	}
	if it.walk != nil {
		if it.walk.k >= it.walk.sch.count {
			st.Epoch, st.Consumed = it.epoch+1, 0
		} else {
			st.Consumed = it.walk.sch.global(it.walk.k) - it.walk.sch.rank
		}
	}
	return st
}
