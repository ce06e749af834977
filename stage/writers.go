package stage

import (
	"context"
	"fmt"
	"sync"

	"github.com/gdsload/gdsload/internal/crc32c"
)

// writers is the pool of goroutines that write committed chunks into
// their files, shared by every file of a run. A failed write cancels the
// run through fail, so the loader stops reading at once; the file's wait
// reports the error too.
type writers struct {
	reqs chan writeReq
	fail func(error)
	wg   sync.WaitGroup
}

// writeReq is one chunk to write: buf (n bytes of data, then padding) at
// off, whose data had CRC32C crc when committed; done returns the buffer
// to the ring.
type writeReq struct {
	s    *sink
	off  int64
	buf  []byte
	n    int64
	crc  uint32
	done func()
}

// startWriters starts n writers. Up to queued writes wait for one without
// blocking queue: with queued at least the ring's buffers, each of which a
// queued write holds, a commit never waits for the disk, so the loader
// goes on hashing the chunks it has read while earlier ones are written.
func startWriters(n, queued int, fail func(error)) *writers {
	w := &writers{reqs: make(chan writeReq, queued), fail: fail}
	for range n {
		w.wg.Go(func() {
			for r := range w.reqs {
				err := r.s.out.WriteAt(r.buf, r.off)
				if err == nil && crc32c.Checksum(r.buf[:r.n]) != r.crc {
					err = fmt.Errorf("the %d bytes at offset %d of %s changed while they were written; this is a bug, please report it", r.n, r.off, r.s.out.Final())
				}
				r.done()
				if err != nil {
					w.fail(err)
				}
				r.s.wrote(r.n, err)
			}
		})
	}
	return w
}

// queue hands r to a writer, waiting while all are busy.
func (w *writers) queue(ctx context.Context, r writeReq) error {
	select {
	case w.reqs <- r:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// stop waits for the writes in flight and ends the pool.
func (w *writers) stop() {
	close(w.reqs)
	w.wg.Wait()
}
