// Package webdataset reads WebDataset shards: POSIX tar archives, plain or
// compressed with gzip, zstd or bzip2, whose consecutive members sharing a key form
// one sample.
//
// It owns the member-to-sample grouping rules (matching the WebDataset
// Python library's base_plus_ext and group_by_keys), decompression with
// memory caps, brace patterns such as "shard-{000000..000099}.tar", and the
// index.json manifest that records each shard's size, sample count and
// SHA-256 checksum.
//
// The package knows nothing of ranks, epochs or shuffling; that is
// shards/iterator's job. It is a format package, like shards/npy and
// shards/safetensors: it imports neither loader nor vfs, so checking
// files read through a vfs.Mux against their manifest (Manifests, Checks,
// ReadManifest, VerifyShards) is package stage's, and listing the shards a
// Mux serves (iterator.ShardFilesAt) is the iterator's.
package webdataset
