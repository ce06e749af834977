// Package cache keeps complete, verified local copies of remote files (s3://
// objects, rdmafs:// files) in a folder on the node's own disk, shared by
// every process of the node that uses the same folder, so that the ranks of
// a training job and its epochs fetch each file from the store once.
//
// # Contract
//
// A Cache serves a remote file from its local copy only when the copy is
// complete and was verified when it was written:
//
//   - An entry is keyed by the file's URL and its vfs.File Identity (the
//     ETag of an object, size and modification time of an rdmafs file): an
//     object replaced in the bucket has a new key and is fetched again,
//     never served stale. The old entry ages out by LRU.
//   - A copy is written under a temporary name in tmp/, fsynced, renamed into
//     entries/, and only then described by its metadata file (written the
//     same way); the folder is fsynced after each rename. A copy without
//     metadata is never served. A process killed mid-download (kill -9)
//     leaves only a temporary file, removed by the next process that makes
//     room.
//   - A copy is verified as it is written: against the SHA-256 a caller
//     expects (a manifest's, through vfs.ExpectSHA256), and against the
//     ETag: a single-part upload's is the MD5 of the bytes, a multipart
//     upload's the MD5 of its parts' MD5s (the part size from one HEAD of
//     part 1); with neither, only its size is checked (rdmafs reads carry
//     their own CRC in transit). Its SHA-256
//     and CRC-32C are recorded. Every hit re-checks the CRC-32C
//     (WithVerifyHits) and compares the SHA-256 with the one expected; a
//     mismatch drops the entry and fetches the file again. Verify
//     re-hashes every entry.
//
// # Sharing
//
// Processes coordinate through flock(2) locks in the folder; there is no
// daemon. A reader holds a shared lock on its entry's lock file from Open
// to Close, so no process evicts a file in use. A downloader holds the
// exclusive lock: the other processes that want the same file wait for it
// (the wait is counted in Stats.Waited) and then read the copy. The kernel
// drops the locks of a process that dies, even by kill -9: a waiting
// process then takes the exclusive lock, finds no complete copy, and
// downloads the file itself.
//
// # Bounds
//
// The bytes of complete copies and of downloads under way (each reserves
// its full size before it starts) never exceed the limit (WithLimit;
// default DefaultLimitFraction of the free space of the folder's file
// system plus what the cache already holds, measured by Open). Making room
// evicts the least recently used entries that no process holds. When the
// entries in use leave no room, the file is read from the store directly,
// uncached (Stats.Bypassed), instead of waiting on readers that may never
// let go. A file larger than the whole limit is an error (ErrTooLarge).
//
// # Layout
//
//	DIR/cache.lock             flock: held while making room
//	DIR/entries/KEY.data       a complete copy
//	DIR/entries/KEY.json       its metadata (URL, identity, size, sums); the commit mark
//	DIR/locks/KEY.lock         flock: shared by readers, exclusive by the downloader
//	DIR/tmp/KEY.PID.N          a download under way, flocked by its writer
//	DIR/stats.json             hits and misses of every process, merged at Close
//
// KEY is the hex SHA-256 of the URL and the identity. The locks work on
// local file systems (the node's NVMe); a folder on a network file system
// whose flock is not coherent across nodes must not be shared by nodes.
package cache
