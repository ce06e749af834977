// Package loader is gdsload's data engine: it moves byte ranges of sources
// (local files, remote files) into destinations (caller host memory, a ring of
// reused buffers, GPU memory) with a shared scheduler and a pool of workers.
//
// A load is a set of Jobs. Each job is cut into chunks (default 4 MiB, a
// multiple of the source's direct-I/O alignment) that all workers of the load
// share, so many small files do not serialize and memory stays bounded
// whatever the file sizes. Every load returns a Result with its statistics,
// the path it took (gds, bounce, host, rdma) and the reason for that path.
//
// The package knows nothing of file formats (see shards) or of the command
// line (see cmd/gdsload). GPU destinations are built from the cufile package
// and plug in through the Destination interface.
package loader
