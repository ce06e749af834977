package iterator

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/gdsload/gdsload/vfs"
)

// MapOpener is an optional capability of a ShardOpener: it maps a shard's
// stored bytes read-only into memory instead of reading them into a
// buffer. The iterator maps compressed shards this way when the opener
// offers it and decompresses them straight from the page cache into the
// decoded buffer: one pass over the data fewer than reading them first,
// which on data that does not compress is much of the CPU time
// (docs/PERFORMANCE-NOTES.md, shards/iterator). Decoded samples never
// alias a mapping. unmap releases it; a file
// truncated while mapped fails that shard with an error instead of
// crashing the process.
//
// MapShard returns an error wrapping errors.ErrUnsupported when it will
// not map this shard; the iterator then reads it as usual.
type MapOpener interface {
	MapShard(ctx context.Context, name string) (data []byte, unmap func() error, err error)
}

// rawShard is a shard's stored bytes as the read stage got them: a pooled
// buffer or a mapping, given back with release.
type rawShard struct {
	data    []byte
	mapped  bool
	release func()
}

// readRaw reads shard sh for decoding: mapped when the opener offers it and
// the name says the shard is compressed (an uncompressed shard's bytes are
// what samples alias, so they live in a buffer), else into a buffer from
// pool.
func readRaw(ctx context.Context, op ShardOpener, pool *bufferPool, sh Shard, limit int64, compressed bool) (rawShard, error) {
	if mo, ok := op.(MapOpener); ok && compressed {
		data, unmap, err := mo.MapShard(ctx, sh.Name)
		switch {
		case err == nil && sh.Bytes > 0 && int64(len(data)) > sh.Bytes || int64(len(data)) > limit:
			unmap()
			return rawShard{}, tooLarge(sh.Name, sh.Bytes, limit, int64(len(data)))
		case err == nil:
			return rawShard{data: data, mapped: true, release: func() { _ = unmap() }}, nil
		case !errors.Is(err, errors.ErrUnsupported):
			return rawShard{}, err
		}
	}
	buf, err := readShard(vfs.ExpectSHA256(ctx, sh.SHA256), op, pool, sh.Name, sh.Bytes, limit)
	if err != nil {
		return rawShard{}, err
	}
	return rawShard{data: buf, release: func() { pool.put(buf) }}, nil
}

// guardMapped runs f, which reads raw; if raw is a mapping and reading it
// faults (the file was truncated under the mapping: SIGBUS), the fault
// becomes an error naming the shard. Other panics go on.
func guardMapped(raw rawShard, name string, f func() error) (err error) {
	if !raw.mapped {
		return f()
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fault, ok := r.(interface{ Addr() uintptr })
		start := uintptr(unsafe.Pointer(unsafe.SliceData(raw.data)))
		if !ok || fault.Addr() < start || fault.Addr() >= start+uintptr(len(raw.data)) {
			panic(r)
		}
		err = fmt.Errorf("iterator: shard %s: reading it at offset %d failed: it was truncated or changed while being read", name, fault.Addr()-start)
	}()
	return f()
}
