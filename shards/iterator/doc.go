// Package iterator is gdsload's deterministic, resumable, rank-partitioned
// iterator over WebDataset shards.
//
// It owns the epoch order of a dataset (which sample comes at which global
// position, a function of the dataset fingerprint, the seed, the epoch and a
// number of canonical partitions fixed when a run starts, never of the world
// size), the split of that order between ranks, bounded prefetch and
// decoding of shards, and the small JSON state that resumes an epoch
// exactly, also at another world size. docs/ITERATOR.md explains the design.
//
// Reading shard bytes goes through ShardOpener. Openers that also implement
// SourceOpener (DirOpener does) are read through the loader: parallel
// chunks, O_DIRECT where the file system takes it, into reused buffers.
package iterator
