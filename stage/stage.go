package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

// SidecarName is the folder inside a destination that holds the stage
// journal and lock. Its name starts with a dot so it stays out of the way,
// and Expand leaves it out when a staged directory is staged again.
const SidecarName = ".gdsload-stage"

// Verify selects how much checking a staged file gets before its rename.
type Verify string

// Verification levels.
const (
	// VerifyDigest compares the digest of the bytes read with the
	// manifest (when one lists the file), and the CRC32C of each chunk
	// after its write with the bytes the digest covered.
	VerifyDigest Verify = "digest"
	// VerifyReadback also re-reads the written temporary file (O_DIRECT
	// where possible) and compares its digest.
	VerifyReadback Verify = "readback"
)

// ParseVerify maps "digest" (or "") and "readback" to a Verify.
func ParseVerify(s string) (Verify, error) {
	switch Verify(s) {
	case "", VerifyDigest:
		return VerifyDigest, nil
	case VerifyReadback:
		return VerifyReadback, nil
	}
	return "", fmt.Errorf("verify %q: want digest or readback", s)
}

// ErrChunkSize reports a chunk size smaller than the sources' direct-I/O
// alignment needs.
var ErrChunkSize = errors.New("chunk size below the sources' direct-I/O alignment")

// ErrURLDestination reports a destination written as a URL (s3://,
// rdmafs://): a stage writes into a local directory, and no URL scheme
// takes writes. A file:// URL names a local directory and is accepted.
var ErrURLDestination = errors.New("stage destination is not a local directory")

// localDest maps dest to the local directory it names: itself, or the path
// of a file:// URL. Any other URL is refused with ErrURLDestination, so
// that it is never written as a local folder named after its scheme.
func localDest(dest string) (string, error) {
	if !vfs.IsURL(dest) {
		return dest, nil
	}
	loc, err := vfs.Parse(dest)
	if err == nil && loc.IsLocal() {
		return loc.Path, nil
	}
	return "", fmt.Errorf("destination %s: %w: URLs are read-only sources; stage into a local directory and upload from there", dest, ErrURLDestination)
}

// ModTimer is an optional capability of a Source that knows its
// modification time (a local *loader.File, a remote file). Sources without
// it are never trusted as already staged and are copied on every run.
type ModTimer interface {
	ModTime() time.Time
}

// Options tune a stage. The zero value stages local files with sha256.
type Options struct {
	// FS opens the entries' sources: local paths, and the URLs it serves
	// (rdmafs://, s3://). Nil: Open and Preview make a vfs.Mux with its
	// defaults (rdmafs clients present GDSLOAD_TOKEN), which Close
	// closes; a given FS stays the caller's to close, after the Stager.
	FS *vfs.Mux
	// ReadDirect and WriteDirect select O_DIRECT for reading local sources
	// and for writing staged files (default auto: where the file system
	// takes it, saying why not otherwise).
	ReadDirect, WriteDirect loader.DirectMode
	// Workers is the number of concurrent chunk reads (default 8).
	Workers int
	// ChunkSize is the largest read and write (default 4 MiB).
	ChunkSize int64
	// Checksum is the digest of every file (default sha256); files a
	// manifest lists are always checked with sha256.
	Checksum loader.Checksum
	// Verify is the verification level (default digest).
	Verify Verify
	// OnProgress, if set, is called from the workers with the size of
	// each chunk read. It must be cheap and concurrency-safe.
	OnProgress func(n int64)
	// FailFast stops a run at the first file that cannot be staged. By
	// default such a file is recorded and the others are staged (see
	// Run and PartialError).
	FailFast bool
	// Reverify re-reads every file the journal says is already staged
	// and compares its digest with the journal's, before trusting it: a
	// file damaged in place (its mtime restored) is staged again.
	Reverify bool

	// skipSpaceCheck lets tests reach the out-of-space errors of writes.
	skipSpaceCheck bool
	// fs is the file system the destination is written through (nil: the
	// operating system's); tests wrap it to inject faults and observe
	// the order of writes, syncs and renames.
	fs fileops.FS
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = loader.DefaultWorkers
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = loader.DefaultChunkSize
	}
	o.ChunkSize = (o.ChunkSize + loader.DefaultAlignment - 1) / loader.DefaultAlignment * loader.DefaultAlignment
	if o.Checksum == "" || o.Checksum == loader.ChecksumNone {
		o.Checksum = loader.ChecksumSHA256
	}
	if o.Verify == "" {
		o.Verify = VerifyDigest
	}
	if o.fs == nil {
		o.fs = fileops.Default()
	}
	return o
}

// Stager stages into one destination directory, which it holds locked
// from Open to Close.
type Stager struct {
	dest, side string
	absDest    string // dest made absolute, "" when it cannot be
	wd         string // the working directory relative sources are in
	spaceDir   string // where free space is measured: dest, or its nearest existing parent in a preview
	opts       Options
	lock       *os.File
	j          *journal
	removed    int
	dirs       map[string]bool // directories known to exist
	ownFS      *vfs.Mux        // made for the stage, closed by Close
}

func newStager(dest string, opts Options) (*Stager, error) {
	dest, err := localDest(dest)
	if err != nil {
		return nil, err
	}
	s := &Stager{dest: dest, side: filepath.Join(dest, SidecarName), opts: opts.withDefaults(), dirs: map[string]bool{}}
	if s.opts.FS == nil {
		m, err := vfs.New()
		if err != nil {
			return nil, err
		}
		s.opts.FS, s.ownFS = m, m
	}
	s.absDest, _ = filepath.Abs(dest)
	s.wd, _ = os.Getwd()
	return s, nil
}

// open opens a source for reading, local files with ReadDirect.
func (s *Stager) open(ctx context.Context, name string) (vfs.File, error) {
	return s.opts.FS.Open(ctx, name, vfs.WithDirect(s.opts.ReadDirect))
}

// Open prepares dest for staging (a local directory: a URL is refused
// with ErrURLDestination): creates it and its sidecar folder, takes
// the lock (failing with ErrLocked, naming the holder's pid, when another
// stage holds it), removes temporary files that interrupted runs left, and
// reads the journal of files already staged.
func Open(dest string, opts Options) (_ *Stager, err error) {
	s, err := newStager(dest, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.closeFS()
		}
	}()
	if err := os.MkdirAll(s.side, 0o755); err != nil {
		return nil, destError(dest, err)
	}
	lock, err := lockDest(s.side, dest)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if s.removed, err = removeStaleTemps(s.dest); err != nil {
		s.lock.Close()
		return nil, err
	}
	if s.j, err = openJournal(s.opts.fs, s.side); err != nil {
		s.lock.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the lock, and the vfs.Mux the stage made.
func (s *Stager) Close() error {
	err := s.j.close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	s.closeFS()
	return err
}

func (s *Stager) closeFS() {
	if s.ownFS != nil {
		_ = s.ownFS.Close()
		s.ownFS = nil
	}
}

// removeStaleTemps removes the temporary files of interrupted runs, in the
// destination and in its sidecar folder (an interrupted journal rewrite).
// The lock is held, so none of them belongs to a running stage.
func removeStaleTemps(dest string) (int, error) {
	n := 0
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && durable.IsTempName(d.Name()) {
			if err := os.Remove(p); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("removing temporary files of earlier runs from %s: %w", dest, err)
	}
	return n, nil
}

// destError says what is wrong with the destination and what to do.
func destError(dest string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("cannot write to destination %s: permission denied; fix its permissions or stage elsewhere (%w)", dest, err)
	}
	return fmt.Errorf("destination %s: %w", dest, err)
}

// Plan is what a Run will do: each entry copied or skipped.
type Plan struct {
	items []item
	// CopyFiles and CopyBytes are what the run will copy.
	CopyFiles int
	CopyBytes int64
	// Damaged counts staged files a re-verify found changed in place;
	// they are among those copied.
	Damaged int
}

// damagedReason is the reason given for a file staged again because a
// re-verify found it changed in place.
const damagedReason = "the staged copy no longer matched the digest recorded when it was staged (changed in place); staged again"

// PlannedEntry is what a Run will do with one entry.
type PlannedEntry struct {
	Name   string `json:"name"` // path relative to the destination
	Source string `json:"source"`
	Bytes  int64  `json:"bytes"`
	Action string `json:"action"` // "copy", or "skip": already staged and verified
	Reason string `json:"reason,omitempty"`
}

// Entries lists what the plan does with each entry, in order.
func (p *Plan) Entries() []PlannedEntry {
	out := make([]PlannedEntry, len(p.items))
	for i, it := range p.items {
		out[i] = PlannedEntry{Name: it.Rel, Source: it.Source, Bytes: it.Size, Action: "copy"}
		if it.skip {
			out[i].Action = "skip"
		}
		if it.damaged {
			out[i].Reason = damagedReason
		}
	}
	return out
}

// Preview plans a stage into dest without touching it: no folder is
// created, no lock taken, no temporary file removed, and the journal is
// only read. Its plan says what a Run would copy and skip now (a stage
// running meanwhile may change that).
func Preview(ctx context.Context, dest string, entries []Entry, opts Options) (*Plan, error) {
	s, err := newStager(dest, opts)
	if err != nil {
		return nil, err
	}
	defer s.closeFS()
	recs, err := readJournal(filepath.Join(s.side, journalName))
	if err != nil {
		return nil, err
	}
	s.j = &journal{recs: recs}
	s.spaceDir = s.dest
	for {
		if _, err := os.Stat(s.spaceDir); err == nil {
			break
		}
		parent := filepath.Dir(s.spaceDir)
		if parent == s.spaceDir {
			break
		}
		s.spaceDir = parent
	}
	return s.Plan(ctx, entries)
}

type item struct {
	Entry
	final string
	sum   loader.Checksum
	skip  bool
	rec   record // the journal record of a skipped file
	// damaged: a re-verify found the staged file's digest differs from
	// its record, so it is copied again.
	damaged bool
}

// reverify hashes the staged files p would skip, a few at a time, and
// unmarks those whose digest differs from their journal record.
func (s *Stager) reverify(ctx context.Context, p *Plan) error {
	n := min(s.opts.Workers, maxVerifiers)
	bufs := make(chan []byte, n)
	for range n {
		buf, err := loader.AllocHost(int(s.opts.ChunkSize))
		if err != nil {
			return err
		}
		defer loader.FreeHost(buf)
		bufs <- buf
	}
	errs := make([]error, len(p.items))
	var wg sync.WaitGroup
	for i := range p.items {
		it := &p.items[i]
		if !it.skip {
			continue
		}
		buf := <-bufs
		wg.Go(func() {
			defer func() { bufs <- buf }()
			f, err := loader.OpenFile(it.final, loader.DirectAuto)
			if err != nil {
				errs[i] = fmt.Errorf("re-verifying %s: %w", it.final, err)
				return
			}
			defer f.Close()
			got, err := loader.DigestSource(ctx, f, loader.Checksum(it.rec.Checksum), buf)
			if err != nil {
				errs[i] = fmt.Errorf("re-verifying %s: %w", it.final, err)
				return
			}
			if got != it.rec.Digest {
				it.skip, it.damaged = false, true
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Plan decides which entries are already staged: those the journal
// records with the same source size and modification time, whose
// destination file is still the one written then (same inode, size and
// modification time) and, when a manifest lists them, whose digest matches
// it; with Options.Reverify, also whose bytes still hash to the digest
// recorded. Everything else is copied. It fails before copying anything when the
// destination cannot hold what is to be copied.
func (s *Stager) Plan(ctx context.Context, entries []Entry) (*Plan, error) {
	p := &Plan{items: make([]item, len(entries))}
	var replaced int64
	for i, e := range entries {
		rel := filepath.FromSlash(e.Rel)
		if !filepath.IsLocal(rel) || strings.HasPrefix(e.Rel, SidecarName+"/") || e.Rel == SidecarName {
			return nil, fmt.Errorf("source %s: destination path %q is not a plain relative path", e.Source, e.Rel)
		}
		if e.Size < 0 {
			if err := s.describe(ctx, &e); err != nil {
				return nil, err
			}
		}
		if err := s.outsideDest(e.Source); err != nil {
			return nil, err
		}
		it := item{Entry: e, final: filepath.Join(s.dest, rel), sum: s.opts.Checksum}
		if e.Expect != "" {
			it.sum = loader.ChecksumSHA256
		}
		it.rec, it.skip = s.staged(it)
		p.items[i] = it
	}
	if s.opts.Reverify {
		if err := s.reverify(ctx, p); err != nil {
			return nil, err
		}
	}
	for i := range p.items {
		it := &p.items[i]
		if it.damaged {
			p.Damaged++
		}
		if !it.skip {
			p.CopyFiles++
			p.CopyBytes += it.Size
			if st, err := os.Stat(it.final); err == nil {
				replaced += st.Size()
			}
		}
	}
	spaceDir := s.spaceDir
	if spaceDir == "" {
		spaceDir = s.dest
	}
	if free := durable.FreeSpace(spaceDir); !s.opts.skipSpaceCheck && free >= 0 && p.CopyBytes-replaced > free {
		return nil, &loader.NoSpaceError{Dir: s.dest, Needed: p.CopyBytes, Free: free, Err: syscall.ENOSPC}
	}
	return p, nil
}

// CheckDestination refuses a destination directory inside a local source
// directory: the next run would list the staged copies as sources too.
// Paths are compared with symbolic links resolved, so a destination that
// is a link to (or into) a source is refused like the source itself. A
// destination written as a URL other than file:// is refused with
// ErrURLDestination.
func CheckDestination(sources []string, dest string) error {
	dest, err := localDest(dest)
	if err != nil {
		return err
	}
	ad, err := resolvePath(dest)
	if err != nil {
		return nil
	}
	for _, src := range sources {
		if vfs.IsURL(src) || strings.Contains(src, "{") {
			continue
		}
		if st, err := os.Stat(src); err != nil || !st.IsDir() {
			continue
		}
		as, err := resolvePath(src)
		if err != nil {
			continue
		}
		if ad == as {
			return fmt.Errorf("destination %s is the source directory %s itself (%s); stage into a directory outside the sources", dest, src, as)
		}
		if strings.HasPrefix(ad, as+string(filepath.Separator)) {
			return fmt.Errorf("destination %s (%s) is inside the source directory %s: the next run would stage its copies again; stage into a directory outside the sources", dest, ad, src)
		}
	}
	return nil
}

// resolvePath makes p absolute with every symbolic link resolved, also
// where its last components do not exist yet (a destination about to be
// made): the deepest existing ancestor is resolved and the rest appended.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		if dir == filepath.Dir(dir) {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// outsideDest refuses a local source inside the destination: its copy
// would be staged again, one level deeper, on every run.
func (s *Stager) outsideDest(src string) error {
	if vfs.IsURL(src) {
		return nil
	}
	if s.absDest == "" || (s.wd == "" && !filepath.IsAbs(src)) {
		return nil
	}
	as := filepath.Clean(src) // filepath.Abs, without a getwd per entry
	if !filepath.IsAbs(src) {
		as = filepath.Join(s.wd, src)
	}
	if strings.HasPrefix(as, s.absDest+string(filepath.Separator)) {
		return fmt.Errorf("source %s is inside the destination %s; stage into a directory outside the sources", src, s.dest)
	}
	return nil
}

// describe opens a source listed without a size to learn it.
func (s *Stager) describe(ctx context.Context, e *Entry) error {
	src, err := s.open(ctx, e.Source)
	if err != nil {
		return sourceError(e.Source, err)
	}
	e.Size, e.ModTime = src.Size(), src.ModTime()
	return src.Close()
}

func closeSource(src loader.Source) {
	if c, ok := src.(io.Closer); ok {
		_ = c.Close()
	}
}

// staged reports whether it is already staged and verified.
func (s *Stager) staged(it item) (record, bool) {
	r, ok := s.j.get(it.Rel)
	if !ok || it.ModTime.IsZero() || r.Size != it.Size || r.MTimeNs != it.ModTime.UnixNano() {
		return r, false
	}
	if it.Expect != "" && (r.Checksum != string(loader.ChecksumSHA256) || r.Digest != it.Expect) {
		return r, false
	}
	st, err := os.Lstat(it.final)
	if err != nil || !st.Mode().IsRegular() || st.Size() != r.Size || st.ModTime().UnixNano() != r.DestMTimeNs {
		return r, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return r, ok && sys.Ino == r.Ino
}

// mkdirs creates d and its missing parents under the destination, syncing
// each parent so the new entries are durable.
func (s *Stager) mkdirs(d string) error {
	if s.dirs[d] || d == s.dest {
		return nil
	}
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		s.dirs[d] = true
		return nil
	}
	parent := filepath.Dir(d)
	if err := s.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return destError(d, err)
	}
	if err := s.opts.fs.SyncDir(parent); err != nil {
		return err
	}
	s.dirs[d] = true
	return nil
}
