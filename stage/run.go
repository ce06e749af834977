package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
)

// minBatchBytes is the least a batch of files holds (unless the plan ends
// first): a loader.Load per batch keeps all workers busy across many small
// files, and a batch is the most a kill loses, since each batch's files
// are verified, recorded and renamed while the next one loads.
const minBatchBytes = 256 << 20

// maxVerifiers bounds the files of a batch verified at once.
const maxVerifiers = 4

// Run copies what p says to copy, batch by batch, and returns the result.
//
// A failure that concerns one source only (a *SourceError: unreadable,
// changed, not matching its manifest) is recorded against that file, as
// rsync and rclone do, and the others are staged: Run then returns the
// result and a *PartialError listing the failed files. With
// Options.FailFast, and for any other failure (the destination, the
// run), Run stops and returns the error alone, naming the file. On error
// or cancellation every temporary file of the run is removed; files
// already renamed are complete and verified, and a rerun skips them.
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
	var failed []FileResult
	for _, f := range r.files {
		if f.Status == StatusFailed {
			failed = append(failed, f)
		}
	}
	res.Failed = len(failed)
	res.Damaged = p.Damaged
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.GiBPerS = float64(res.CopiedBytes) / (1 << 30) / res.Seconds
	}
	res.Reason = humanize.CountedReasons(r.reasons, res.Copied) // the goroutines are done
	if len(failed) > 0 {
		return res, &PartialError{Failed: failed, Files: res.Files}
	}
	return res, nil
}

// fail records a source failure of plan item i, or returns err when the
// run must stop instead (FailFast, or not a source failure).
func (r *run) fail(i int, err error) error {
	var se *SourceError
	if r.s.opts.FailFast || !errors.As(err, &se) {
		return err
	}
	it := r.p.items[i]
	r.mu.Lock()
	r.remaining -= it.Size
	r.mu.Unlock()
	r.files[i] = FileResult{Name: it.Rel, Source: it.Source, Bytes: it.Size, Status: StatusFailed, Error: err.Error(), Manifest: it.Manifest}
	return nil
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
	outs []*durable.AtomicFile
	sink []*sink
	sum  loader.Checksum
}

func (b *batch) abort() {
	for _, sk := range b.sink {
		sk.wait() // no write may land in a file being removed
	}
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
	r.writers = startWriters(o.Workers, 2*o.Workers, cancel)
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
		b, err := r.loadBatch(ctx, idx)
		if err == nil && b == nil {
			continue // every file of the batch failed, and was recorded
		}
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

// loadBatch loads a batch. Unless FailFast, a source that fails to open
// is recorded and left out, and a batch whose load fails is loaded again
// one file at a time, so that a read error is recorded against its file
// alone. It returns a nil batch when no file of idx is left.
func (r *run) loadBatch(ctx context.Context, idx []int) (*batch, error) {
	for {
		b, err := r.load(ctx, idx)
		if err == nil || r.s.opts.FailFast || ctx.Err() != nil {
			return b, err
		}
		var oe *openError
		if errors.As(err, &oe) {
			if err := r.fail(oe.item, oe.err); err != nil {
				return nil, err
			}
			idx = slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return i == oe.item })
			if len(idx) == 0 {
				return nil, nil
			}
			continue
		}
		var le *loadError
		var ns *loader.NoSpaceError
		if !errors.As(err, &le) || errors.As(err, &ns) {
			return nil, err // the destination's, or the run's
		}
		if len(idx) > 1 {
			return r.loadEach(ctx, idx)
		}
		// One file, read through the loader, failed: the error names
		// the source and offset.
		if err := r.fail(idx[0], sourceError(r.p.items[idx[0]].Source, err)); err != nil {
			return nil, err
		}
		return nil, nil
	}
}

// loadEach loads and finalizes the files of idx one at a time (after a
// batch of them failed) and returns no batch: they are all done.
func (r *run) loadEach(ctx context.Context, idx []int) (*batch, error) {
	for _, i := range idx {
		b, err := r.loadBatch(ctx, []int{i})
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		if err := r.finalize(ctx, b); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// openError is a source of plan item that could not be opened (or had
// changed size) while a batch was set up.
type openError struct {
	item int
	err  error
}

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

// loadError is a failed read of a batch's sources through the loader.
type loadError struct{ err error }

func (e *loadError) Error() string { return e.err.Error() }
func (e *loadError) Unwrap() error { return e.err }

// load opens a batch's sources and temporary files and loads it; on error
// nothing of the batch is left.
func (r *run) load(ctx context.Context, idx []int) (*batch, error) {
	b := &batch{idx: idx, sum: r.p.items[idx[0]].sum}
	jobs := make([]loader.Job, 0, len(idx))
	var size int64
	for _, i := range idx {
		it := r.p.items[i]
		src, err := r.s.open(ctx, it.Source)
		if err != nil {
			b.abort()
			return nil, &openError{i, sourceError(it.Source, err)}
		}
		b.srcs = append(b.srcs, src)
		if src.Size() != it.Size {
			b.abort()
			return nil, &openError{i, &SourceError{it.Source, fmt.Sprintf("changed since it was listed: %d bytes, was %d; rerun the stage", src.Size(), it.Size), ErrSourceChanged}}
		}
		if err := r.s.mkdirs(filepath.Dir(it.final)); err != nil {
			b.abort()
			return nil, err
		}
		out, err := durable.CreateAtomicFS(r.s.opts.fs, it.final, it.Size, durable.DirectMode(r.s.opts.WriteDirect))
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
		return nil, fmt.Errorf("%w: the sources need %d-byte chunks for direct I/O, over the %d-byte buffers; use chunks of at least %d bytes", ErrChunkSize, c, r.ring.BufferSize(), c)
	}
	lr, err := loader.Load(ctx, jobs, loader.Options{
		Workers: r.s.opts.Workers, ChunkSize: r.chunk, Checksum: b.sum,
		Reason: "staging into files", OnProgress: r.s.opts.OnProgress,
	})
	if err == nil && ctx.Err() != nil {
		// loader.Load can return early without an error when cancelled
		// between chunks; the bytes are then incomplete.
		err = context.Cause(ctx)
	}
	if err != nil {
		b.abort()
		if ctx.Err() == nil {
			err = &loadError{err}
		}
		return nil, err
	}
	for k, i := range idx {
		it := r.p.items[i]
		f := lr.Files[k]
		r.files[i] = FileResult{Name: it.Rel, Source: it.Source, Bytes: it.Size, Status: StatusCopied,
			Checksum: b.sum, Digest: f.Digest(b.sum), Manifest: it.Manifest, DirectRead: f.Direct, Reason: f.Reason}
		if it.damaged {
			r.files[i].Reason = strings.TrimPrefix(f.Reason+"; "+damagedReason, "; ")
		}
		r.addReason(f.Reason)
		if err := checkModTime(b.srcs[k], it.Entry); err != nil {
			b.abort()
			return nil, &SourceError{it.Source, err.Error(), ErrSourceChanged}
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
		return fmt.Errorf("was modified at %s, after it was listed; rerun the stage", now.Format(time.RFC3339Nano))
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
	// The files verified go on together: a failed file is dropped alone
	// unless it stops the run (FailFast, or a failure of the destination).
	var ok []int
	var fatal error
	for k, i := range b.idx {
		err := errs[k]
		if err == nil {
			ok = append(ok, k)
			continue
		}
		if err = r.fail(i, err); err != nil {
			fatal = err
			break
		}
		b.outs[k].Abort() // this file only: the others go on
	}
	err := r.publish(b, ok)
	if err == nil {
		err = fatal
	}
	if err != nil {
		b.abort()
	}
	return err
}

// verify checks a loaded file against its manifest and the bytes written,
// syncs it and, if asked, reads it back through buf.
func (r *run) verify(ctx context.Context, b *batch, k, i int, buf []byte) error {
	it, out, fr := r.p.items[i], b.outs[k], &r.files[i]
	// Its writes first: a file that fails here is removed.
	if err := b.sink[k].wait(); err != nil {
		return r.destFileError(it.final, err)
	}
	if it.Expect != "" && fr.Digest != it.Expect {
		return &SourceError{it.Source, fmt.Sprintf("(%s): the sha256 of the bytes read is %s, but the manifest %s lists %s; the source is corrupt or the manifest stale, nothing was staged under its name",
			it.Rel, fr.Digest, it.Manifest, it.Expect), ErrManifestMismatch}
	}
	wd, wn := b.sink[k].writtenDigest()
	fr.WrittenCRC32C = wd
	if wn != it.Size || (b.sum == loader.ChecksumCRC32C && wd != fr.Digest) {
		return fmt.Errorf("%s: wrote %d of %d bytes with crc32c %s, but read %d bytes with %s %s; this is a bug, please report it", it.Rel, wn, it.Size, wd, it.Size, b.sum, fr.Digest)
	}
	if err := out.Sync(); err != nil {
		return r.destFileError(it.final, err)
	}
	if r.s.opts.Verify == VerifyReadback {
		return r.readBack(ctx, it, out, fr.Digest, b.sum, buf)
	}
	return nil
}

// publish records the files ks of a batch, verified and synced, in the
// journal with one append and one sync, renames them into place and syncs
// each directory they landed in once: per file the order stays write,
// fsync, journal, rename, directory fsync, at a fraction of the syncs for
// a batch of many files.
func (r *run) publish(b *batch, ks []int) error {
	if len(ks) == 0 {
		return nil
	}
	recs := make([]record, len(ks))
	for n, k := range ks {
		it, out, fr := r.p.items[b.idx[k]], b.outs[k], &r.files[b.idx[k]]
		if err := out.SetModeTime(it.Mode, it.ModTime); err != nil {
			return r.destFileError(it.final, err)
		}
		st, err := out.Stat()
		if err != nil {
			return err
		}
		sys, _ := st.Sys().(*syscall.Stat_t)
		recs[n] = record{Rel: it.Rel, Source: it.Source, Size: it.Size, Checksum: string(b.sum), Digest: fr.Digest, DestMTimeNs: st.ModTime().UnixNano()}
		if sys != nil {
			recs[n].Ino = sys.Ino
		}
		if !it.ModTime.IsZero() {
			recs[n].MTimeNs = it.ModTime.UnixNano()
		}
		fr.DirectWrite = out.Direct()
		r.addReason(out.DirectReason())
	}
	// Recorded before the renames: a record names the temporary file's
	// inode, so an interrupted rename leaves a record that matches nothing.
	if err := r.s.j.add(recs...); err != nil {
		return err
	}
	var dirs []string
	var err error
	for _, k := range ks {
		it, out := r.p.items[b.idx[k]], b.outs[k]
		if err = out.Rename(); err != nil {
			err = r.destFileError(it.final, err)
			break
		}
		if d := filepath.Dir(it.final); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
		r.res.Copied++
		r.res.CopiedBytes += it.Size
	}
	// The files renamed are synced into their directories even when a
	// later rename failed.
	for _, d := range dirs {
		if serr := r.s.opts.fs.SyncDir(d); serr != nil && err == nil {
			err = r.destFileError(d, serr)
		}
	}
	return err
}

// readBack re-reads the synced temporary file and compares its digest.
func (r *run) readBack(ctx context.Context, it item, out *durable.AtomicFile, want string, sum loader.Checksum, buf []byte) error {
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
