package iterator

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gdsload/gdsload/internal/crc32c"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// job is one shard read on behalf of one visit: the samples at sorted
// shard-local indices idx, which are the visit's samples at positions pos
// (see visit.samples).
type job struct {
	shard int
	seq   int64 // place in the order the consumer receives jobs
	idx   []int64
	pos   []int64
	done  chan jobResult // buffered: a worker never blocks on it
	// raw is the shard's bytes as read (a pooled buffer or a mapping), or
	// readErr why not; filled by the read stage before a decoder sees the
	// job.
	raw     rawShard
	readErr error
}

type jobResult struct {
	samples []*webdataset.Sample
	hold    *holder
	err     error
}

// holder is one decoded shard buffer that the samples of one job alias. It
// goes back to the pool once its last sample has been returned and the
// caller has moved on (the next Next call).
type holder struct {
	buf  []byte
	left int
	pool *bufferPool // where buf goes back to
}

// loaded is one decoded sample waiting in a visit until its turn.
type loaded struct {
	shard  int
	index  int64
	sample *webdataset.Sample
	hold   *holder
}

// pipeline prefetches and decodes the shards of one rank, in the order the
// rank will need them, from a starting point to the end of the run's last
// epoch: dispatch → read stage (one shard at a time through the loader,
// ahead of the decoders, so I/O overlaps decoding) → decode workers. It runs
// on across epochs, so that workers that finish an epoch's last shards
// start on the next epoch's first instead of waiting while one worker
// decodes the epoch's last shard. At most slots jobs are queued, being
// read, decoding or decoded but not yet taken by the consumer.
type pipeline struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	visits chan *visit
	slots  chan struct{}
	// bufs holds decoded shards; head is the seq of the next job the
	// consumer will receive (see decodeBuffer).
	bufs *bufferPool
	head atomic.Int64
	seq  int64 // the next job's seq; dispatch's alone
	// layouts hands the consumer the layout of each epoch after the first,
	// in order, as dispatch makes it: one layout serves both sides.
	layouts chan *layout
	// maxBuffers is how many decoded-shard buffers decoders fill before
	// they wait for one to come back (see decodeBuffer).
	maxBuffers int
}

// startPipeline starts prefetching at epoch's schedule sch over layout lay;
// after that epoch it goes on with the next ones from their beginnings, up
// to the run's last epoch.
func (it *Iterator) startPipeline(epoch int64, lay *layout, sch schedule) *pipeline {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{
		cancel: cancel,
		visits: make(chan *visit, it.opts.Prefetch),
		slots:  make(chan struct{}, it.opts.Prefetch),
		bufs:   it.pool,
		// One ahead is enough: dispatch has handed out an epoch's last
		// visit before it makes the next epoch's layout.
		layouts: make(chan *layout, 1),
	}
	p.maxBuffers = it.opts.Workers
	reads := make(chan *job)
	// The read stage keeps up to one shard per worker read ahead, so
	// workers that finish together do not wait for a read each. Slots
	// still bound every job in flight.
	work := make(chan *job, it.opts.Workers)
	p.wg.Go(func() {
		defer close(reads)
		defer close(p.visits)
		// The consumer starts a pipeline only for an epoch of the run.
		for p.dispatch(ctx, epoch, lay, sch, reads) && epoch+1 < it.opts.Epochs {
			epoch++
			lay = newLayout(it.ds, it.ord, epoch)
			sch = it.scheduleFrom(lay.n, 0)
			select {
			case p.layouts <- lay:
			case <-ctx.Done():
				return
			}
		}
	})
	var gate *aheadGate // ahead.go
	if it.opts.CacheAhead > 0 {
		gate = newAheadGate(it.opts.CacheAhead)
		p.wg.Go(func() { it.warmLoop(ctx, gate, epoch, lay, sch) })
	}
	p.wg.Go(func() { it.readLoop(ctx, reads, work, gate) })
	for range it.opts.Workers {
		p.wg.Go(func() { it.decodeLoop(ctx, p, work) })
	}
	return p
}

// dispatch walks the rank's schedule of one epoch and hands out each new
// visit's jobs; false when ctx ended it first. A visit goes to the
// consumer before its jobs take slots, so the consumer can free slots while
// a visit with many shards is still being queued.
func (p *pipeline) dispatch(ctx context.Context, epoch int64, lay *layout, sch schedule, work chan<- *job) bool {
	wk := newWalker(lay, sch)
	for {
		_, v, fresh, ok := wk.next()
		if !ok {
			return true
		}
		if !fresh {
			continue
		}
		v.epoch = epoch
		v.perm = lay.perm(v.part, v.win)
		v.jobs = planJobs(lay, v)
		select {
		case p.visits <- v:
		case <-ctx.Done():
			return false
		}
		for _, j := range v.jobs {
			j.seq, p.seq = p.seq, p.seq+1
			select {
			case p.slots <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			select {
			case work <- j:
			case <-ctx.Done():
				return false
			}
		}
	}
}

// planJobs lists, per shard, the samples a visit needs, in the order they
// are stored in the window.
func planJobs(lay *layout, v *visit) []*job {
	win := &lay.windows[v.part][v.win]
	type want struct{ off, pos int64 } // stored offset in the window, place in the visit
	wants := make([]want, 0, v.count())
	for i, pos := v.iStart, int64(0); i < v.end; i, pos = i+v.step, pos+1 {
		off := i - win.start
		if v.perm != nil {
			off = int64(v.perm[off])
		}
		wants = append(wants, want{off, pos})
	}
	if v.perm != nil { // without a permutation they come in stored order
		slices.SortFunc(wants, func(a, b want) int { return cmp.Compare(a.off, b.off) })
	}
	var jobs []*job
	for _, w := range wants {
		shard, idx := win.locate(w.off)
		if len(jobs) == 0 || jobs[len(jobs)-1].shard != shard {
			jobs = append(jobs, &job{shard: shard, done: make(chan jobResult, 1)})
		}
		j := jobs[len(jobs)-1]
		j.idx = append(j.idx, idx)
		j.pos = append(j.pos, w.pos)
	}
	return jobs
}

// readLoop reads each job's shard, in order, and hands the job on. After
// cancellation it drains reads without reading, so dispatch can finish.
func (it *Iterator) readLoop(ctx context.Context, reads <-chan *job, work chan<- *job, gate *aheadGate) {
	defer close(work)
	for j := range reads {
		if ctx.Err() != nil {
			continue
		}
		sh := it.ds.Shards[j.shard]
		compressed := webdataset.CompressionFromName(sh.Name) != webdataset.None
		j.raw, j.readErr = readRaw(ctx, it.opts.Opener, it.rawPool, sh, 2*it.opts.maxShardBytes(), compressed)
		gate.done()
		select {
		case work <- j:
		case <-ctx.Done():
			if j.readErr == nil {
				j.raw.release()
			}
		}
	}
}

func (it *Iterator) decodeLoop(ctx context.Context, p *pipeline, work <-chan *job) {
	rd, err := webdataset.NewReader(bytes.NewReader(nil), webdataset.None, it.opts.ReaderOptions...)
	var dec *webdataset.Decompressor
	if err == nil {
		dec, err = webdataset.NewDecompressor(it.opts.MaxShardBytes, 0)
	}
	if err != nil {
		for j := range work {
			j.done <- jobResult{err: err}
		}
		return
	}
	defer rd.Close()
	defer dec.Close()
	for j := range work {
		samples, hold, err := it.decode(ctx, rd, dec, j, func(size int64) ([]byte, error) { return p.decodeBuffer(ctx, j, size) })
		j.done <- jobResult{samples: samples, hold: hold, err: err}
	}
}

// decode takes one shard as read, decompresses it whole into a pooled buffer and
// picks out the samples the job asks for; their fields alias that buffer.
func (it *Iterator) decode(ctx context.Context, rd *webdataset.Reader, dec *webdataset.Decompressor, j *job, buffer func(size int64) ([]byte, error)) ([]*webdataset.Sample, *holder, error) {
	sh := it.ds.Shards[j.shard]
	raw, err := j.raw, j.readErr
	j.raw = rawShard{}
	if err != nil {
		return nil, nil, err
	}
	tarData, tarPool, kept, err := it.unpack(raw, sh, dec, buffer)
	if !kept {
		raw.release()
	}
	if err != nil {
		return nil, nil, err
	}
	hold := &holder{buf: tarData, left: len(j.idx), pool: tarPool}
	rd.ResetBytes(tarData, sh.Name)
	out := make([]*webdataset.Sample, 0, len(j.idx))
	for idx := int64(0); len(out) < len(j.idx); idx++ {
		if idx%256 == 0 && ctx.Err() != nil {
			tarPool.put(tarData)
			return nil, nil, ctx.Err()
		}
		var err error
		if idx == j.idx[len(out)] {
			var s *webdataset.Sample
			if s, err = rd.Next(); err == nil {
				out = append(out, s)
			}
		} else {
			_, _, err = rd.Skip()
		}
		if err == io.EOF {
			err = fmt.Errorf("iterator: shard %s ends after %d samples, the dataset lists %d (stale manifest?)", sh.Name, idx, sh.Samples)
		}
		if err != nil {
			tarPool.put(tarData)
			return nil, nil, err
		}
	}
	return out, hold, nil
}

// unpack checks a shard as read against the dataset and returns its tar
// bytes in a buffer of the returned pool: raw's own buffer when the shard
// is not compressed and was read into one (kept: the caller must not
// release raw), else a buffer of its own. Unless kept, the caller
// releases raw afterwards.
func (it *Iterator) unpack(raw rawShard, sh Shard, dec *webdataset.Decompressor, buffer func(size int64) ([]byte, error)) (tarData []byte, pool *bufferPool, kept bool, err error) {
	err = guardMapped(raw, sh.Name, func() error {
		c := webdataset.DetectCompression(sh.Name, raw.data)
		// A zstd shard whose CRC-32C is to be checked, and whose data
		// barely compresses, is summed as the decoder reads it
		// (DecompressSummed), only its size checked before: decoding it
		// is little more than a copy, and a pass of its own for the sum
		// cost as much again. A shard that compresses is summed first:
		// libzstd decodes a whole frame in one go only with all of its
		// input at hand, and fed a piece at a time it spent more CPU on
		// text shards (docs/PERFORMANCE-NOTES.md, shards/iterator).
		check := checkEntry(sh, it.opts)
		summed := c == webdataset.Zstd && sh.Bytes > 0 && sh.SampleBytes < 2*sh.Bytes && check.CRC32C != ""
		var verified bool
		var err error
		if summed {
			err = webdataset.VerifyShardBytesQuick(raw.data, webdataset.ShardEntry{Name: sh.Name, Bytes: sh.Bytes})
		} else {
			verified, err = checkShard(raw.data, sh, it.opts)
		}
		if err != nil {
			return err
		}
		if c == webdataset.None {
			if !raw.mapped {
				tarData, pool, kept = raw.data, it.rawPool, true
				return nil
			}
			// Misnamed: a mapping samples must not alias.
			tarData, pool = append(it.rawPool.get(int64(len(raw.data))), raw.data...), it.rawPool
			return nil
		}
		// A hint only, and trusted only up to 64 times the compressed
		// bytes: output past it grows the buffer as it comes.
		out, err := buffer(min(it.bufferHint(sh), 64*int64(len(raw.data))+1<<20, it.opts.maxShardBytes()))
		if err != nil {
			return err
		}
		switch {
		case summed:
			var crc uint32
			tarData, err = dec.DecompressSummed(out, raw.data, c, sh.Name, func(p []byte) { crc = crc32c.Update(crc, p) })
			if cerr := webdataset.CheckShardCRC32C(check, crc); cerr != nil {
				err = cerr // damaged bytes, whatever the decoder made of them
			}
		case verified:
			tarData, err = dec.DecompressVerified(out, raw.data, c, sh.Name)
		default:
			tarData, err = dec.Decompress(out, raw.data, c, sh.Name)
		}
		if err != nil {
			it.pool.put(out)
			return err
		}
		pool = it.pool
		return nil
	})
	return tarData, pool, kept, err
}

// decodeHint is the size to ask of the pool for shard sh decoded: its
// samples' bytes and about 1 KiB of tar headers per sample, or three times
// its stored bytes, whichever is larger.
func decodeHint(sh Shard) int64 { return max(sh.SampleBytes+sh.Samples<<10, 3*sh.Bytes) }

// bufferHint is decodeHint(sh), raised to the largest hint of the dataset
// when that is at most a quarter more: shards of nearly the same size then
// ask for buffers of one size class (poolSize), and a buffer that one
// shard filled serves every other. Without it a 36 MiB buffer that a
// 37.8 MiB shard could not use was dropped for a fresh 40 MiB one, and
// fresh memory is dear (see bufferPool).
func (it *Iterator) bufferHint(sh Shard) int64 {
	h := decodeHint(sh)
	if it.maxHint > h && it.maxHint <= h+h/4 {
		return it.maxHint
	}
	return h
}

// load waits for all jobs of visit v and files their samples in v. A job
// that failed is handed to skip with its shard: nil leaves its samples
// out, an error is returned.
func (p *pipeline) load(ctx context.Context, v *visit, skip func(shard int, err error) error) error {
	v.samples = make([]loaded, v.count())
	for _, j := range v.jobs {
		var r jobResult
		select {
		case r = <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-p.slots
		p.head.Store(j.seq + 1)
		p.bufs.wake()
		if r.err != nil {
			if err := skip(j.shard, r.err); err != nil {
				return err
			}
			continue
		}
		for k, s := range r.samples {
			v.samples[j.pos[k]] = loaded{shard: j.shard, index: j.idx[k], sample: s, hold: r.hold}
		}
	}
	v.jobs = nil
	return nil
}

// decodeBuffer returns a buffer from the pool for job j's decoded shard.
// When none is free and maxBuffers are live, the decoder waits for one to
// come back rather than fault in a fresh one, unless j is the job the
// consumer receives next: the consumer may be waiting for it while
// holding buffers (of earlier jobs of the same visit) that it cannot give
// back before, so j never waits.
//
// Why wait: the consumer hands a buffer back soon after it receives the
// job (yielding a shard's samples takes well under a millisecond), and
// with decoders checking the next shard's digest first it is usually back
// before it is asked for. Decoders that allocated instead ran ahead into
// fresh memory whenever one shard was slow, and fresh memory is dear (see
// bufferPool): on bench-iterate's incompressible shards two workers
// faulted in four buffers where two serve.
func (p *pipeline) decodeBuffer(ctx context.Context, j *job, size int64) ([]byte, error) {
	return p.bufs.getWait(ctx, size, p.maxBuffers, func() bool { return j.seq <= p.head.Load() })
}

func (p *pipeline) stop() {
	p.cancel()
	p.wg.Wait()
}
