package loader

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/stats"
)

// DefaultChunkSize is the chunk size of a load unless Options say otherwise.
const DefaultChunkSize = 4 << 20

// DefaultWorkers is the number of concurrent reads unless Options say
// otherwise: enough to keep an NVMe queue busy, as fio's iodepth 8 does.
const DefaultWorkers = 8

// Options tune a load. The zero value is usable.
type Options struct {
	// Workers is the number of concurrent chunk reads (default 8).
	Workers int
	// ChunkSize is the largest read; rounded up to a multiple of the
	// sources' direct-I/O alignment (default 4 MiB, or more for sources
	// that prefer larger chunks, EffectiveChunkSize, up to the buffer size
	// of destinations with fixed buffers, such as a Ring).
	ChunkSize int64
	// Checksum computes a digest of each job's bytes as they landed.
	Checksum Checksum
	// Reason is recorded in the result: why the destinations' route was
	// chosen (Landing.Reason says it for the destinations a Landing lays
	// out). The route itself is the destinations' own (Router).
	Reason string
	// Interleave is how many jobs have their chunks handed out in turn,
	// a window that slides on as jobs run out of chunks. With a checksum,
	// one worker at a time hashes a job, so jobs in turn are hashed on as
	// many cores at once. Default: 1 without a checksum (one job after
	// another), with one the number of cores the process may run on.
	Interleave int
	// OnProgress, if set, is called from the workers with the size of
	// each chunk once it landed. It must be cheap and concurrency-safe.
	OnProgress func(n int64)
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Checksum == "" {
		o.Checksum = ChecksumNone
	}
	if o.Interleave <= 0 {
		o.Interleave = 1
		if o.Checksum != ChecksumNone {
			o.Interleave = min(runtime.GOMAXPROCS(0), runtime.NumCPU())
		}
	}
	return o
}

// Load runs jobs with one shared scheduler: all chunks of all jobs go to one
// pool of workers, in job order (Options.Interleave jobs in turn), so many
// small files do not serialize and a large file is read by all workers at
// once. It returns once every byte landed (destinations flushed, sources
// verified unchanged) or at the first error, which names the source and
// offset; on error or cancellation all workers have stopped when it
// returns. Result.Files follows the order of jobs, one entry per job.
//
// Load neither opens nor closes sources and destinations: the caller that
// opened them closes them, after Load returns (vfs.Files.Close,
// Landing.Close, or each one's Close).
func Load(ctx context.Context, jobs []Job, opts Options) (*Result, error) {
	srcs := make([]Source, len(jobs))
	for i, j := range jobs {
		srcs[i] = j.Source
	}
	align := alignmentOf(srcs)
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = autoChunkSize(jobs, srcs)
	}
	opts.ChunkSize = alignUp(opts.ChunkSize, align)
	opts = opts.withDefaults()
	plans := make([]plan, len(jobs))
	totalChunks := 0
	for i, j := range jobs {
		p, err := newPlan(i, j, opts.ChunkSize, align)
		if err != nil {
			return nil, err
		}
		plans[i] = p
		totalChunks += p.nChunks
	}
	e := &engine{opts: opts, plans: plans, lat: make([]time.Duration, totalChunks), taken: make([]int, len(plans))}
	if opts.Checksum != ChecksumNone {
		e.hashers = make([]*orderedHasher, len(plans))
		for i, p := range plans {
			if _, ok := p.Dest.(ReadBacker); !ok {
				e.hashers[i] = newOrderedHasher(opts.Checksum, p.Dest)
			}
		}
	}
	return e.run(ctx)
}

type engine struct {
	opts    Options
	plans   []plan
	hashers []*orderedHasher // nil entries: digest by read-back

	mu      sync.Mutex // guards the cursor and orders span acquisition
	active  []int      // the jobs whose chunks are handed out in turn
	rr      int        // the position in active of the next job's turn
	added   int        // the jobs added to active so far
	taken   []int      // per job, the chunks handed out
	lat     []time.Duration
	nLat    atomic.Int64
	errOnce sync.Once
	err     error
}

func (e *engine) run(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0 := cpuTime()
	start := time.Now()

	var wg sync.WaitGroup
	for range e.opts.Workers {
		wg.Go(func() {
			if err := e.work(ctx); err != nil {
				e.fail(err)
				cancel()
			}
		})
	}
	wg.Wait()
	for _, h := range e.hashers {
		if h != nil {
			h.abort()
		}
	}
	if err := e.finish(ctx); err != nil {
		return nil, err
	}
	wall := time.Since(start)
	return e.result(ctx, wall, cpuTime()-cpu0)
}

func (e *engine) fail(err error) {
	e.errOnce.Do(func() { e.err = err })
}

// finish flushes every destination once, then checks the sources did not
// change while they were read.
func (e *engine) finish(ctx context.Context) error {
	flushed := map[Destination]bool{}
	for _, p := range e.plans {
		if flushed[p.Dest] {
			continue
		}
		flushed[p.Dest] = true
		fctx := ctx
		if e.err != nil {
			fctx = context.WithoutCancel(ctx) // drain copies still in flight
		}
		if err := p.Dest.Flush(fctx); err != nil && e.err == nil {
			e.fail(&Error{Op: "land", Name: p.Source.Name(), Offset: -1, Err: err})
		}
	}
	if e.err == nil && ctx.Err() != nil {
		// Cancelled with no worker in a read: never report success
		// for bytes that were not all loaded.
		e.err = context.Cause(ctx)
	}
	if e.err != nil {
		return e.err
	}
	verified := map[Source]bool{}
	for _, p := range e.plans {
		v, ok := p.Source.(Verifier)
		if !ok || verified[p.Source] {
			continue
		}
		verified[p.Source] = true
		if err := v.Verify(); err != nil {
			return &Error{Op: "verify", Name: p.Source.Name(), Offset: -1, Err: err}
		}
	}
	return nil
}

// next hands out the next chunk and, for the span path, its memory, under
// one lock so memory is taken in chunk order.
func (e *engine) next(ctx context.Context) (p *plan, i int, span Span, ok bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.active) < e.opts.Interleave && e.added < len(e.plans) {
		if e.plans[e.added].nChunks > 0 {
			e.active = append(e.active, e.added)
		}
		e.added++
	}
	if ctx.Err() != nil {
		return nil, 0, Span{}, false, context.Cause(ctx)
	}
	if len(e.active) == 0 {
		return nil, 0, Span{}, false, nil
	}
	// Each job's chunks go out in order, so its earliest unhashed chunk
	// always holds memory (see orderedHasher).
	e.rr %= len(e.active)
	j := e.active[e.rr]
	p, i = &e.plans[j], e.taken[j]
	if e.taken[j]++; e.taken[j] == p.nChunks {
		e.active = slices.Delete(e.active, e.rr, e.rr+1)
	} else {
		e.rr++
	}
	if p.route != routeSpan {
		return p, i, Span{}, true, nil
	}
	off, n := p.chunkAt(i)
	span, err = p.Dest.Span(ctx, p.DestOffset+off-p.Offset, n)
	if err != nil {
		return nil, 0, Span{}, false, &Error{Op: "land", Name: p.Source.Name(), Offset: off, Err: err}
	}
	return p, i, span, true, nil
}

func (e *engine) work(ctx context.Context) error {
	for {
		p, i, span, ok, err := e.next(ctx)
		if err != nil || !ok {
			return err
		}
		off, n := p.chunkAt(i)
		t0 := time.Now()
		switch p.route {
		case routeFile:
			err = e.readDirect(ctx, p, off, n)
		case routeDevice:
			err = e.readDevice(ctx, p, off, n)
		default:
			err = e.readSpan(ctx, p, i, off, span)
		}
		if err != nil {
			return err
		}
		e.lat[e.nLat.Add(1)-1] = time.Since(t0)
		if e.opts.OnProgress != nil {
			e.opts.OnProgress(n)
		}
	}
}

func (e *engine) readDirect(ctx context.Context, p *plan, off, n int64) error {
	d := p.Dest.(FileReaderDestination)
	// The job's first chunk starts at the aligned offset below when its
	// lead allows (see Job.Lead).
	var lead int64
	if off == p.Offset && off%DefaultAlignment <= p.Lead {
		lead = off % DefaultAlignment
	}
	got, err := d.ReadFromFile(ctx, p.Source.(FileDescriptorSource), off-lead, p.DestOffset+off-p.Offset-lead, n+lead)
	got = max(got-lead, 0)
	if err == nil && got != n {
		err = fmt.Errorf("%w: read %d of %d bytes", ErrChanged, got, n)
	}
	if err != nil {
		return &Error{Op: "read", Name: p.Source.Name(), Offset: off, Err: err}
	}
	return nil
}

func (e *engine) readDevice(ctx context.Context, p *plan, off, n int64) error {
	addr := p.Dest.(DeviceDestination).DeviceAddress(p.DestOffset + off - p.Offset)
	got, err := p.Source.(DeviceReaderSource).ReadAtDevice(ctx, addr, n, off)
	if err == io.EOF && int64(got) == n {
		err = nil
	}
	if err == nil && int64(got) != n {
		err = fmt.Errorf("%w: read %d of %d bytes", ErrChanged, got, n)
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &Error{Op: "read", Name: p.Source.Name(), Offset: off, Err: err}
	}
	return nil
}

func (e *engine) readSpan(ctx context.Context, p *plan, i int, off int64, span Span) error {
	var got int
	var err error
	if c, ok := p.Source.(ContextReaderAt); ok {
		got, err = c.ReadAtContext(ctx, span.Buf, off)
	} else {
		got, err = p.Source.ReadAt(span.Buf, off)
	}
	if err == io.EOF && got == len(span.Buf) {
		err = nil
	}
	if err == nil && got != len(span.Buf) {
		err = fmt.Errorf("%w: short read of %d of %d bytes", ErrChanged, got, len(span.Buf))
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		span.Abort()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &Error{Op: "read", Name: p.Source.Name(), Offset: off, Err: err}
	}
	if e.hashers != nil && e.hashers[p.index] != nil {
		err = e.hashers[p.index].land(ctx, i, span)
	} else {
		err = span.Commit(ctx)
	}
	if err != nil {
		return &Error{Op: "land", Name: p.Source.Name(), Offset: off, Err: err}
	}
	return nil
}

func (e *engine) result(ctx context.Context, wall, cpu time.Duration) (*Result, error) {
	r := &Result{Seconds: wall.Seconds(), Route: RouteHost, CPUSeconds: cpu.Seconds()}
	if len(e.plans) > 0 {
		r.Route = routeOfDest(e.plans[0].Dest)
	}
	var fellBack []string
	var buf []byte
	for i := range e.plans {
		p := &e.plans[i]
		f := FileResult{Name: p.Source.Name(), Bytes: p.Length, Route: routeOfDest(p.Dest), Offset: p.Offset,
			Partial: p.Offset != 0 || p.Length != p.Source.Size()}
		if d, ok := p.Source.(DirectInfo); ok {
			f.Direct, f.Reason = d.Direct(), d.DirectReason()
		}
		if r, ok := p.Dest.(interface{ Refused(string) string }); ok && p.route == routeFile {
			if why := r.Refused(p.Source.Name()); why != "" {
				f.Route = RouteBounce
				f.Reason = strings.TrimPrefix(f.Reason+"; "+why+": bounced through pinned memory", "; ")
			}
		}
		if m, ok := p.Dest.(cuFileModer); ok && p.route == routeFile && f.Route == RouteGDS {
			f.GDSMode = m.CuFileMode()
			if r.GDSMode == "" {
				r.GDSMode = f.GDSMode
			}
		}
		if f.Route == RouteGDS && p.route != routeFile {
			// cuFile needs an O_DIRECT descriptor; the gds destination
			// bounced this file through pinned memory instead.
			f.Route = RouteBounce
			f.Reason = strings.TrimPrefix(f.Reason+"; no O_DIRECT descriptor for cuFile: bounced through pinned memory", "; ")
		}
		if f.Route == RouteRDMA && p.route != routeDevice {
			f.Route = RouteBounce
			f.Reason = strings.TrimPrefix(f.Reason+"; the source cannot write into device memory: bounced through pinned memory", "; ")
		}
		if f.Reason != "" {
			fellBack = append(fellBack, f.Reason)
		}
		if e.opts.Checksum != ChecksumNone {
			var digest string
			if h := e.hashers[p.index]; h != nil {
				digest = h.digest()
			} else {
				if buf == nil {
					buf = make([]byte, min(e.opts.ChunkSize, 16<<20))
				}
				var err error
				digest, err = readBackDigest(ctx, p.Dest.(ReadBacker), e.opts.Checksum, p.DestOffset, p.Length, buf)
				if err != nil {
					return nil, &Error{Op: "checksum", Name: p.Source.Name(), Offset: -1, Err: err}
				}
			}
			f.setDigest(e.opts.Checksum, digest)
		}
		r.Bytes += p.Length
		r.Files = append(r.Files, f)
	}
	r.Reason = joinReasons(e.opts.Reason, fellBack, len(e.plans))
	r.Route = actualRoute(r.Route, r.Files)
	r.finish(e.lat[:e.nLat.Load()])
	return r, nil
}

// actualRoute is the load's route as the files took it: when every file
// fell back from the destination's route to one other (a gds load of files
// cuFile could not read), that other route, so the top-level route never
// names one no byte took.
func actualRoute(chosen Route, files []FileResult) Route {
	if len(files) == 0 {
		return chosen
	}
	took := files[0].Route
	for _, f := range files[1:] {
		if f.Route != took {
			return chosen
		}
	}
	return took
}

// joinReasons states the path's reason and, once per distinct cause, how
// many files fell back from direct I/O.
func joinReasons(pathReason string, fellBack []string, files int) string {
	counts := map[string]int{}
	for _, r := range fellBack {
		counts[r]++
	}
	var parts []string
	for _, p := range []string{pathReason, humanize.CountedReasons(counts, files)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; ")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	u, s := stats.ProcessCPUTime()
	return u + s
}
