// Package loader is gdsload's data engine: it moves byte ranges of sources
// (local files, remote files) into destinations (caller host memory, a ring of
// reused buffers, GPU memory) with a shared scheduler and a pool of workers.
//
// A load is a set of Jobs. Each job is cut into chunks (default 4 MiB, a
// multiple of the source's direct-I/O alignment) that all workers of the load
// share, so many small files do not serialize and memory stays bounded
// whatever the file sizes. Workers read large chunks of local files with
// pread(2); small O_DIRECT reads (random 4 KiB blocks) go through the
// process's io_uring (internal/uring), so that no thread blocks per read.
// File.ReadMany reads many small ranges of one file (samples at random
// offsets) with many in flight from the calling goroutine alone, so that
// a completion wakes no goroutine of its own. Every load returns a Result
// with its statistics, the route it took (gds, bounce, host, rdma: each
// destination reports its own) and the reason for it; Result.Files
// follows the order of the jobs.
// Load reads sources and fills destinations but never opens or closes them:
// whoever opened them closes them after Load returns.
//
// OpenTarget resolves where a load lands ("host", "gpu:N", "auto") with the
// auto policy (gds when cuFile can, else bounce, else host for auto, and why
// the better routes were refused) into a Landing that lays sources out as
// jobs in one allocation, or allocates per file for a checkpoint.
//
// The package knows nothing of file formats (see shards), of URLs (see vfs,
// which opens them as Sources) or of the command line (see cmd/gdsload). GPU
// destinations are built from the cufile package and plug in through the
// Destination interface.
package loader
