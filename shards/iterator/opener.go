package iterator

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// ShardOpener gives access to shard bytes by name. Open may be called from
// several goroutines at once. The iterator reads the returned stream to the
// end and closes it; it never retains it after Close. Implementations must
// honour ctx for blocking work.
type ShardOpener interface {
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// DirOpener opens shards as files beneath Root. Names are resolved inside
// Root (no "..", absolute paths or symlink escapes).
type DirOpener struct {
	Root string
}

// Open opens Root/name.
func (o DirOpener) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.OpenInRoot(o.Root, filepath.FromSlash(name))
	if err != nil {
		return nil, fmt.Errorf("iterator: opening shard %s in %s: %w", name, o.Root, err)
	}
	return f, nil
}

// bufferPool keeps a few shard-sized buffers alive between shards, so
// prefetching reuses memory that is already touched instead of faulting in
// fresh pages for every shard.
type bufferPool struct {
	mu   sync.Mutex
	free [][]byte
	keep int
}

func (p *bufferPool) get(size int64) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.free {
		if int64(cap(b)) >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return b[:0]
		}
	}
	if n := len(p.free); n > 0 {
		p.free = p.free[:n-1] // too small: let it go, allocate a bigger one
	}
	return make([]byte, 0, size)
}

func (p *bufferPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < p.keep {
		p.free = append(p.free, b[:0])
	}
}

// readShard reads a whole shard into a pooled buffer. size is the expected
// size (a hint; the stream decides).
func readShard(ctx context.Context, op ShardOpener, pool *bufferPool, name string, size int64) ([]byte, error) {
	rc, err := op.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := pool.get(size + 1) // +1: reaching EOF needs no regrowth
	for {
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
			return nil, fmt.Errorf("iterator: reading shard %s at offset %d: %w", name, len(buf), err)
		}
		if ctx.Err() != nil {
			pool.put(buf)
			return nil, ctx.Err()
		}
	}
}
