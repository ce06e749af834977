package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/loader"
)

// minBatchBytes is the least a batch of files holds (unless the plan ends
// first): a loader.Load per batch keeps all workers busy across many small
// files, and a batch is the most a kill loses, since each batch's files
// are verified, recorded and renamed while the next one loads.
const minBatchBytes = 256 << 20

// maxVerifiers bounds the files of a batch verified at once.
const maxVerifiers = 4

// Run copies what p says to copy, batch by batch, and returns the result,
// or the first error, naming the file. On error or cancellation every
// temporary file of the run is removed; files already renamed are complete
// and verified, and a rerun skips them.
func (s *Stager) Run(ctx context.Context, p *Plan) (*Result, error) {
	start := time.Now()
	r := &run{s: s, p: p, res: &Result{Dest: s.dest, Files: len(p.items), Checksum: s.opts.Checksum, Verify: s.opts.Verify, RemovedTemps: s.removed},
		files: make([]FileResult, len(p.items)), reasons: map[string]int{}, remaining: p.CopyBytes}
	for i, it := range p.items {
		r.res.Bytes += it.Size
		if it.skip {
			r.res.Skipped++
			r.files[i] = FileResult{Name: it.Rel, Source: it.Source, Bytes: it.Size, Status: StatusSkipped,
				Checksum: loader.Checksum(it.rec.Checksum), Digest: it.rec.Digest, Manifest: it.Manifest}
		}
	}
	if err := r.copyAll(ctx); err != nil {
		return nil, err
	}
	res := r.res
	res.Entries = r.files
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.GiBPerS = float64(res.CopiedBytes) / (1 << 30) / res.Seconds
	}
	res.Reason = loader.CountedReasons(r.reasons, res.Copied) // the goroutines are done
	return res, nil
}

// run is the state of one Run.
type run struct {
	s         *Stager
	p         *Plan
	res       *Result
	files     []FileResult
	ring      *loader.Ring
	writers   *writers
	chunk     int64
	verifiers chan []byte // read-back buffers, one per file verified at once

	mu        sync.Mutex // the loading and the finalizing goroutine share these
	reasons   map[string]int
	remaining int64 // bytes not yet loaded, for out-of-space errors
}

func (r *run) addReason(why string) {
	if why == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons[why]++
}

// batch is a group of files loaded together, then finalized.
type batch struct {
	idx  []int // plan items
	srcs []loader.Source
	outs []*loader.AtomicFile
	sink []*sink
	sum  loader.Checksum
}

func (b *batch) abort() {
	for _, o := range b.outs {
		o.Abort()
	}
	for _, src := range b.srcs {
		closeSource(src)
	}
	b.srcs = nil
}

func (r *run) copyAll(ctx context.Context) error {
	if r.p.CopyFiles == 0 {
		return nil
	}
	o := r.s.opts
	r.chunk = o.ChunkSize
	ring, err := loader.NewRing(2*o.Workers, r.chunk)
	if err != nil {
		return err
	}
	defer ring.Close()
	r.ring = ring
	// One read-back buffer per verifier; none when nothing is read back.
	nv := min(o.Workers, maxVerifiers)
	r.verifiers = make(chan []byte, nv)
	for range nv {
		var buf []byte
		if o.Verify == VerifyReadback {
			if buf, err = loader.AllocHost(int(r.chunk)); err != nil {
				return err
			}
			defer loader.FreeHost(buf)
		}
		r.verifiers <- buf
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.writers = startWriters(o.Workers, cancel)
	defer r.writers.stop() // before the ring is closed: writes hold its buffers
	var fin chan error     // the finalizing of the previous batch
	wait := func() error {
		if fin == nil {
			return nil
		}
		err := <-fin
		fin = nil
		return err
	}
	for _, idx := range r.batches() {
		b, err := r.load(ctx, idx)
		if err != nil {
			if ferr := wait(); ferr != nil {
				err = ferr // the load was cancelled because finalizing failed
			}
			return r.explain(err)
		}
		if err := wait(); err != nil {
			b.abort()
			return err
		}
		fin = make(chan error, 1)
		go func() {
			err := r.finalize(ctx, b)
			if err != nil {
				cancel(err)
			}
			fin <- err
		}()
	}
	return wait()
}

// batches groups the files to copy: consecutive, one checksum each, at
// most 4 files a worker and at least minBatchBytes unless that is reached.
func (r *run) batches() [][]int {
	o := r.s.opts
	maxFiles := 4 * o.Workers
	maxBytes := max(minBatchBytes, 8*int64(o.Workers)*r.chunk)
	var out [][]int
	var cur []int
	var bytes int64
	var sum loader.Checksum
	for i, it := range r.p.items {
		if it.skip {
			continue
		}
		if len(cur) > 0 && (len(cur) >= maxFiles || bytes >= maxBytes || it.sum != sum) {
			out = append(out, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, i)
		bytes += it.Size
		sum = it.sum
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// load opens a batch's sources and temporary files and loads it; on error
// nothing of the batch is left.
func (r *run) load(ctx context.Context, idx []int) (*batch, error) {
	b := &batch{idx: idx, sum: r.p.items[idx[0]].sum}
	jobs := make([]loader.Job, 0, len(idx))
	var size int64
	for _, i := range idx {
		it := r.p.items[i]
		src, err := r.s.opts.Opener.Open(ctx, it.Source)
		if err != nil {
			b.abort()
			return nil, sourceError(it.Source, err)
		}
		b.srcs = append(b.srcs, src)
		if src.Size() != it.Size {
			b.abort()
			return nil, fmt.Errorf("source %s changed since it was listed: %d bytes, was %d; rerun the stage", it.Source, src.Size(), it.Size)
		}
		if err := r.s.mkdirs(filepath.Dir(it.final)); err != nil {
			b.abort()
			return nil, err
		}
		out, err := loader.CreateAtomic(it.final, it.Size, r.s.opts.WriteDirect)
		if err != nil {
			b.abort()
			return nil, r.destFileError(it.final, err)
		}
		b.outs = append(b.outs, out)
		sk := newSink(out, r.ring, r.writers)
		b.sink = append(b.sink, sk)
		jobs = append(jobs, loader.WholeFile(src, sk))
		size += it.Size
	}
	if c := loader.EffectiveChunkSize(r.chunk, b.srcs); c > r.ring.BufferSize() {
		b.abort()
		return nil, fmt.Errorf("the sources need %d-byte chunks for direct I/O, over the %d-byte buffers; use --chunk-size %d", c, r.ring.BufferSize(), c)
	}
	lr, err := loader.Load(ctx, jobs, loader.Options{
		Workers: r.s.opts.Workers, ChunkSize: r.chunk, Checksum: b.sum,
		Path: loader.PathHost, Reason: "staging into files", OnProgress: r.s.opts.OnProgress,
	})
	if err == nil && ctx.Err() != nil {
		// loader.Load can return early without an error when cancelled
		// between chunks; the bytes are then incomplete.
		err = context.Cause(ctx)
	}
	if err != nil {
		b.abort()
		return nil, err
	}
	for k, i := range idx {
		it := r.p.items[i]
		f := lr.Files[k]
		r.files[i] = FileResult{Name: it.Rel, Source: it.Source, Bytes: it.Size, Status: StatusCopied,
			Checksum: b.sum, Digest: f.Digest(b.sum), Manifest: it.Manifest, DirectRead: f.Direct, Reason: f.Reason}
		r.addReason(f.Reason)
		if err := checkModTime(b.srcs[k], it.Entry); err != nil {
			b.abort()
			return nil, err
		}
	}
	for _, src := range b.srcs {
		closeSource(src)
	}
	b.srcs = nil
	r.mu.Lock()
	r.remaining -= size
	r.mu.Unlock()
	return b, nil
}

// checkModTime closes the gap between listing a source and opening it: the
// loader verified the file did not change while it was read, this that it
// is still the one listed, so the journal records the right time.
func checkModTime(src loader.Source, e Entry) error {
	if e.ModTime.IsZero() {
		return nil
	}
	m, ok := src.(ModTimer) // a *loader.File is one: its time at open, checked by the load
	if !ok {
		return nil
	}
	if now := m.ModTime(); !now.Equal(e.ModTime) {
		return fmt.Errorf("source %s was modified at %s, after it was listed; rerun the stage", e.Source, now.Format(time.RFC3339Nano))
	}
	return nil
}

// finalize verifies, records and renames each file of a loaded batch. On
// error the batch's files not yet renamed are removed.
func (r *run) finalize(ctx context.Context, b *batch) error {
	// Checks, syncs and read-backs run in parallel, a few files at a time;
	// records and renames follow in order.
	errs := make([]error, len(b.idx))
	var wg sync.WaitGroup
	for k, i := range b.idx {
		buf := <-r.verifiers
		wg.Go(func() {
			defer func() { r.verifiers <- buf }()
			errs[k] = r.verify(ctx, b, k, i, buf)
		})
	}
	wg.Wait()
	for k, i := range b.idx {
		err := errs[k]
		if err == nil {
			err = r.publish(b, k, i)
		}
		if err != nil {
			b.abort()
			return err
		}
	}
	return nil
}

// verify checks a loaded file against its manifest and the bytes written,
// syncs it and, if asked, reads it back through buf.
func (r *run) verify(ctx context.Context, b *batch, k, i int, buf []byte) error {
	it, out, fr := r.p.items[i], b.outs[k], &r.files[i]
	if it.Expect != "" && fr.Digest != it.Expect {
		return fmt.Errorf("%s: the sha256 of the bytes read from %s is %s, but the manifest %s lists %s; the source is corrupt or the manifest stale, nothing was staged under its name",
			it.Rel, it.Source, fr.Digest, it.Manifest, it.Expect)
	}
	wd, wn := b.sink[k].writtenDigest()
	fr.WrittenCRC32C = wd
	if wn != it.Size || (b.sum == loader.ChecksumCRC32C && wd != fr.Digest) {
		return fmt.Errorf("%s: wrote %d of %d bytes with crc32c %s, but read %d bytes with %s %s; this is a bug, please report it", it.Rel, wn, it.Size, wd, it.Size, b.sum, fr.Digest)
	}
	if err := out.Sync(); err != nil {
		return r.destFileError(it.final, err)
	}
	if r.s.opts.afterSync != nil {
		r.s.opts.afterSync(it.Rel, out.TempPath())
	}
	if r.s.opts.Verify == VerifyReadback {
		return r.readBack(ctx, it, out, fr.Digest, b.sum, buf)
	}
	return nil
}

// publish records a verified file in the journal and renames it.
func (r *run) publish(b *batch, k, i int) error {
	it, out, fr := r.p.items[i], b.outs[k], &r.files[i]
	st, err := out.Stat()
	if err != nil {
		return err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	rec := record{Rel: it.Rel, Source: it.Source, Size: it.Size, Checksum: string(b.sum), Digest: fr.Digest, DestMTimeNs: st.ModTime().UnixNano()}
	if sys != nil {
		rec.Ino = sys.Ino
	}
	if !it.ModTime.IsZero() {
		rec.MTimeNs = it.ModTime.UnixNano()
	}
	fr.DirectWrite = out.Direct()
	r.addReason(out.DirectReason())
	// Recorded before the rename: the record names the temporary file's
	// inode, so an interrupted rename leaves a record that matches nothing.
	if err := r.s.j.add(rec); err != nil {
		return err
	}
	if err := out.Publish(); err != nil {
		return r.destFileError(it.final, err)
	}
	r.res.Copied++
	r.res.CopiedBytes += it.Size
	return nil
}

// readBack re-reads the synced temporary file and compares its digest.
func (r *run) readBack(ctx context.Context, it item, out *loader.AtomicFile, want string, sum loader.Checksum, buf []byte) error {
	f, err := loader.OpenFile(out.TempPath(), loader.DirectAuto)
	if err != nil {
		return fmt.Errorf("%s: reading back %s: %w", it.Rel, out.TempPath(), err)
	}
	defer f.Close()
	got, err := loader.DigestSource(ctx, f, sum, buf)
	if err != nil {
		return fmt.Errorf("%s: reading back %s: %w", it.Rel, out.TempPath(), err)
	}
	if got != want {
		return fmt.Errorf("%s: read back %s %s from the written file, but the source gave %s; the destination corrupted it, nothing was staged under its name", it.Rel, sum, got, want)
	}
	return nil
}

// destFileError makes write errors on a staged file say what to do.
func (r *run) destFileError(final string, err error) error {
	var ns *loader.NoSpaceError
	if errors.As(err, &ns) {
		return r.noSpace(ns)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("cannot write %s: permission denied; fix the permissions of %s or stage elsewhere (%w)", final, filepath.Dir(final), err)
	}
	return fmt.Errorf("staging %s: %w", final, err)
}

func (r *run) noSpace(ns *loader.NoSpaceError) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Free as it was when the write failed, before the run removed its
	// temporary files.
	return &loader.NoSpaceError{Dir: r.s.dest, Needed: max(r.remaining, ns.Needed), Free: ns.Free, Err: ns.Err}
}

// explain turns errors of a load into the clearest form: out of space as
// a NoSpaceError of the destination.
func (r *run) explain(err error) error {
	var ns *loader.NoSpaceError
	if errors.As(err, &ns) {
		return r.noSpace(ns)
	}
	return err
}
