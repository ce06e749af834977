package iterator

import (
	"context"
	"sync/atomic"

	"github.com/gdsload/gdsload/vfs"
)

// MaxCacheAhead caps Options.CacheAhead.
const MaxCacheAhead = 1 << 16

// aheadGate lets the warm stage run at most n shard reads ahead of the
// read stage: the read stage counts the jobs it has read, and wakes the
// warm stage each time.
type aheadGate struct {
	n    int64
	read atomic.Int64
	tick chan struct{} // buffered 1: a wake-up, never blocking the reader
}

func newAheadGate(n int) *aheadGate {
	return &aheadGate{n: int64(n), tick: make(chan struct{}, 1)}
}

// done records one more job read.
func (g *aheadGate) done() {
	if g == nil {
		return
	}
	g.read.Add(1)
	select {
	case g.tick <- struct{}{}:
	default:
	}
}

// wait blocks until job w (counted from the pipeline's start) is within n
// of the reads done; false when ctx ended, or when the reader has already
// passed w (nothing left to warm for it).
func (g *aheadGate) wait(ctx context.Context, w int64) bool {
	for {
		r := g.read.Load()
		switch {
		case w < r:
			return false
		case w < r+g.n:
			return true
		}
		select {
		case <-g.tick:
		case <-ctx.Done():
			return false
		}
	}
}

// warmLoop walks the same schedule as dispatch, from the same start, and
// opens each job's shard up to CacheAhead reads ahead of the read stage,
// closing it unread: an opener that reads through a cache (vfs/cache)
// downloads the shard into it, so the read that follows finds it on local
// disk, without the memory a deeper Prefetch would hold. Open errors are
// left for the read to report.
func (it *Iterator) warmLoop(ctx context.Context, gate *aheadGate, epoch int64, lay *layout, sch schedule) {
	var w int64
	last := -1
	for {
		wk := newWalker(lay, sch)
		for {
			_, v, fresh, ok := wk.next()
			if !ok {
				break
			}
			if !fresh {
				continue
			}
			v.perm = lay.perm(v.part, v.win) // as dispatch plans it
			for _, j := range planJobs(lay, v) {
				ready := gate.wait(ctx, w)
				w++
				if ctx.Err() != nil {
					return
				}
				if !ready || j.shard == last {
					continue
				}
				last = j.shard
				sh := it.ds.Shards[j.shard]
				if rc, err := it.opts.Opener.Open(vfs.ExpectSHA256(ctx, sh.SHA256), sh.Name); err == nil {
					_ = rc.Close()
				}
			}
		}
		if epoch+1 >= it.opts.Epochs {
			return
		}
		epoch++
		lay = newLayout(it.ds, it.ord, epoch)
		sch = it.scheduleFrom(lay.n, 0)
	}
}
