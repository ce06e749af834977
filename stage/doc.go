// Package stage copies checkpoints and dataset shards onto node-local
// storage, as `gdsload stage` does: every file of the sources lands under a
// destination directory, verified and atomically, and a rerun after an
// interruption continues where the last one stopped.
//
// The package owns the staging engine and its guarantees:
//   - what to stage: Expand turns sources (files, directories copied like
//     `rsync SRC/ DST`, brace patterns, sharded safetensors checkpoints
//     through their *.safetensors.index.json), local or at URLs, into
//     Entries, with the digests a shards manifest (index.json,
//     webdataset.ManifestIndex) promises;
//   - how bytes move: one loader.Load per batch of files reads chunks in
//     parallel (O_DIRECT where possible) into a reused ring of aligned
//     buffers, and each committed chunk is written with pwrite at the same
//     offset into a temporary file (O_DIRECT where possible);
//   - atomicity: each file is written under a temporary dot-name in its
//     final directory, synced, verified, given its source's modification
//     time (and a local source's mode, as cp -p does), recorded, renamed
//     and its directory synced, so a crash never leaves a partial file under a
//     final name; temporaries of earlier runs are removed at start;
//   - verification: the digest of the bytes read (sha256, or crc32c) is
//     compared with the manifest; the bytes written are checked against the
//     bytes hashed, chunk by chunk, with CRC32C (the file's written digest);
//     optionally the written file is re-read and its digest compared;
//   - resumption and exclusion: a sidecar folder in the destination
//     (SidecarName) holds a journal of the files staged and verified and a
//     lock that keeps two stages out of one destination.
//
// Staging into GPU memory instead of a directory is ToGPU.
//
// The manifest checks it applies are exported for any load through a
// vfs.Mux: Manifests finds the index.json beside files, Checks compares
// their sizes before a load and their SHA-256 digests after it, and
// ReadManifest and VerifyShards check a dataset in place.
//
// It knows nothing of the command line: sources are local paths or URLs
// opened through the vfs.Mux in Options.FS.
//
// Its reads and writes are blocking system calls, each holding a Go
// scheduler P while the disk works; a program that stages with a checksum
// on a fast disk hashes faster with more Ps than cores (the gdsload
// command adds 8: see docs/PERFORMANCE-NOTES.md, staging).
package stage
