package iterator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// ShardOpener gives access to shard bytes by name. Open may be called from
// several goroutines at once. The iterator reads the returned stream to the
// end and closes it; it never retains it after Close. Implementations must
// honour ctx for blocking work.
type ShardOpener interface {
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// SourceOpener is an optional capability of a ShardOpener: it opens a
// shard as a loader.Source, so prefetch reads it through the loader
// (parallel chunks, O_DIRECT where the file system takes it) straight into
// a pooled buffer instead of streaming it. close releases the source.
type SourceOpener interface {
	OpenSource(ctx context.Context, name string) (src loader.Source, close func() error, err error)
}

// DirOpener opens shards as files beneath Root. Names are resolved inside
// Root (no "..", absolute paths or symlink escapes). It implements
// SourceOpener: shards are read through the loader.
type DirOpener struct {
	Root string
	// Direct is the loader's O_DIRECT mode (default DirectAuto).
	Direct loader.DirectMode
	// maps keeps mappings between epochs (the iterator's own opener only).
	maps *mapCache
}

// openRoot opens Root, for one shard's lookup in it, unless ctx is done.
func (o DirOpener) openRoot(ctx context.Context) (*os.Root, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(o.Root)
	if err != nil {
		return nil, fmt.Errorf("opening shard directory %s: %w", o.Root, err)
	}
	return root, nil
}

// OpenSource opens Root/name for the loader.
func (o DirOpener) OpenSource(ctx context.Context, name string) (loader.Source, func() error, error) {
	root, err := o.openRoot(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, err := loader.OpenFileInRoot(root, filepath.FromSlash(name), o.Direct)
	if err != nil {
		return nil, nil, fmt.Errorf("opening shard %s in %s: %w%s", name, o.Root, err, mangledHint(name, err))
	}
	return f, f.Close, nil
}

// Open opens Root/name.
func (o DirOpener) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.OpenInRoot(o.Root, filepath.FromSlash(name))
	if err != nil {
		return nil, fmt.Errorf("opening shard %s in %s: %w%s", name, o.Root, err, mangledHint(name, err))
	}
	return f, nil
}

// mangledHint explains a missing shard whose name holds U+FFFD: gdsload
// releases before the escaping of non-UTF-8 names wrote those bytes that
// way into index.json, naming files that do not exist.
func mangledHint(name string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) || !strings.ContainsRune(name, utf8.RuneError) {
		return ""
	}
	return "; the name holds U+FFFD, which older manifests wrote in place of bytes of file names that are not UTF-8: write the manifest again ('gdsload manifest')"
}

// bufferPool keeps a few shard-sized buffers alive between shards, so
// prefetching reuses memory that is already touched instead of faulting in
// fresh pages for every shard. Fresh memory is dear: on a VM whose host
// reclaims the guest's free pages (virtio-balloon free page reporting),
// the first write to a fresh buffer took several times what decoding a
// shard into a buffer already touched takes (docs/PERFORMANCE-NOTES.md,
// shards/iterator).
type bufferPool struct {
	mu   sync.Mutex
	free [][]byte
	keep int
	// live counts the buffers allocated and not yet dropped: in use or
	// free. changed is closed (and replaced) whenever a buffer comes back
	// or wake is called, for getWait.
	live    int
	changed chan struct{}
	allocs  int // buffers allocated in all, for tests
}

func (p *bufferPool) get(size int64) []byte {
	size = poolSize(size)
	p.mu.Lock()
	b, ok := p.takeLocked(size)
	p.mu.Unlock()
	if ok {
		return b
	}
	return shardBuffer(int(size))[:0]
}

// getWait is get for a caller that would rather wait for a buffer to come
// back than fault in a fresh one: when no free buffer fits and limit
// buffers are live already, it waits until a buffer is put back, or until
// grow (called with the pool locked, after each put or wake) allows a new
// one, or ctx is done.
func (p *bufferPool) getWait(ctx context.Context, size int64, limit int, grow func() bool) ([]byte, error) {
	size = poolSize(size)
	p.mu.Lock()
	for len(p.free) == 0 && p.live >= limit && !grow() {
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
	}
	b, ok := p.takeLocked(size)
	p.mu.Unlock()
	if ok {
		return b, nil
	}
	return shardBuffer(int(size))[:0], nil
}

// takeLocked takes a free buffer of at least size bytes, or counts one
// about to be allocated (ok false: the caller allocates it, outside the
// lock, so a put need not wait for fresh memory).
func (p *bufferPool) takeLocked(size int64) (b []byte, ok bool) {
	for i, b := range p.free {
		if int64(cap(b)) >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return b[:0], true
		}
	}
	if n := len(p.free); n > 0 {
		p.free = p.free[:n-1] // too small: let it go, allocate a bigger one
		p.live--
	}
	p.live++
	p.allocs++
	return nil, false
}

// poolSize rounds a request up to one of eight sizes per power of two
// (at most 12.5% more), so shards of nearly the same size share buffers
// instead of each dropping the last one a few bytes too small.
func poolSize(size int64) int64 {
	if size <= 64<<10 {
		return 64 << 10
	}
	step := int64(1) << (bits.Len64(uint64(size)) - 4)
	return (size + step - 1) / step * step
}

func (p *bufferPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < p.keep {
		p.free = append(p.free, b[:0])
	} else {
		p.live--
	}
	p.wakeLocked()
}

// wake makes waiting getWait calls ask their grow function again.
func (p *bufferPool) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wakeLocked()
}

func (p *bufferPool) wakeLocked() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// readShard reads a whole shard into a pooled buffer. size is the size
// the dataset lists (0: unknown); a shard that turns out larger, or larger
// than limit, fails before it is read further, so storage (or a server)
// cannot make the reader allocate without bound.
func readShard(ctx context.Context, op ShardOpener, pool *bufferPool, name string, size, limit int64) ([]byte, error) {
	if size > 0 {
		limit = size
	}
	tooLarge := func(n int64) error { return tooLarge(name, size, limit, n) }
	if so, ok := op.(SourceOpener); ok {
		return loadShard(ctx, so, pool, name, limit, tooLarge)
	}
	rc, err := op.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// +1: reaching EOF needs no regrowth. A listed size is trusted only so
	// far before bytes arrive: beyond 256 MiB the buffer grows as they do.
	buf := pool.get(min(size+1, 256<<20))
	for {
		if int64(len(buf)) > limit {
			pool.put(buf)
			return nil, tooLarge(int64(len(buf)))
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			pool.put(buf)
			return nil, fmt.Errorf("reading shard %s at offset %d: %w", name, len(buf), err)
		}
		if ctx.Err() != nil {
			pool.put(buf)
			return nil, ctx.Err()
		}
	}
}

// tooLarge is the error for a shard of n bytes, more than the size listed
// (when size > 0) or than limit.
func tooLarge(name string, size, limit, n int64) error {
	if size > 0 {
		return fmt.Errorf("shard %s: %w: more than the %d bytes listed (%d found)", name, webdataset.ErrShardSize, size, n)
	}
	return fmt.Errorf("shard %s is larger than %d bytes (twice MaxShardBytes)", name, limit)
}

// shardLoadWorkers is the loader's parallelism for one shard; several
// shards are prefetched at once, so each needs few.
const shardLoadWorkers = 4

// loadShard reads a whole shard through the loader into a pooled buffer.
func loadShard(ctx context.Context, so SourceOpener, pool *bufferPool, name string, limit int64, tooLarge func(int64) error) ([]byte, error) {
	src, closeSrc, err := so.OpenSource(ctx, name)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	if src.Size() > limit {
		return nil, tooLarge(src.Size())
	}
	buf := pool.get(src.Size())[:src.Size()]
	_, err = loader.Load(ctx, []loader.Job{loader.WholeFile(src, loader.NewHostBuffer(buf))},
		loader.Options{Workers: shardLoadWorkers, ChunkSize: 1 << 20})
	if err != nil {
		pool.put(buf)
		return nil, fmt.Errorf("reading shard %s: %w", name, err)
	}
	return buf, nil
}
