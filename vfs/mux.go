package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gdsload/gdsload/internal/regular"
	"github.com/gdsload/gdsload/loader"
)

// ErrClosed reports a Mux used after Close.
var ErrClosed = errors.New("vfs.Mux closed")

// ErrUnknownScheme reports a URL whose scheme no FS is registered for.
var ErrUnknownScheme = errors.New("unknown URL scheme")

// Mux opens URLs through the FS their scheme and authority name. It is
// safe for concurrent use. An FS is made on first use of its authority
// (an rdmafs server is dialled then) and kept until Close.
type Mux struct {
	schemes  map[string]Scheme
	wrappers []func(string, Scheme) Scheme // WithSchemeWrapper

	mu     sync.Mutex
	fss    map[string]*fsEntry // by scheme://authority
	closed bool
}

type fsEntry struct {
	mu sync.Mutex
	fs FS
}

// Option configures a Mux. Each option checks its value; New fails with
// the first refusal.
type Option func(*Mux) error

var schemeName = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)

// WithScheme serves URLs name://authority/path through s (an object
// store's s3, say), replacing what served name before. name is a lower
// case URL scheme; "file" is the local file system and cannot be
// replaced.
func WithScheme(name string, s Scheme) Option {
	return func(m *Mux) error {
		if !schemeName.MatchString(name) || name == "file" || s == nil {
			return fmt.Errorf("scheme %q: want a lower case URL scheme other than file, and a Scheme", name)
		}
		m.schemes[name] = s
		return nil
	}
}

// New returns a Mux serving local paths, file://, the schemes registered
// with Register (s3:// where the program imports package vfs/s3fs,
// rdmafs:// where it imports vfs/rdmafsfs), and the schemes opts add.
// Close it to hang up the clients it dials.
func New(opts ...Option) (*Mux, error) {
	m := &Mux{schemes: registeredSchemes(), fss: map[string]*fsEntry{}}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	m.applyWrappers()
	return m, nil
}

// schemeNames lists the URL schemes m serves besides file://.
func (m *Mux) schemeNames() string {
	names := slices.Sorted(maps.Keys(m.schemes))
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Close closes every FS the Mux made (hanging up rdmafs clients). Files
// opened through them must not be used afterwards. Calling it again does
// nothing.
func (m *Mux) Close() error {
	m.mu.Lock()
	m.closed = true
	fss := m.fss
	m.fss = map[string]*fsEntry{}
	m.mu.Unlock()
	var errs []error
	for _, e := range fss {
		e.mu.Lock()
		if c, ok := e.fs.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		e.fs = nil
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

// resolve parses raw and returns the FS holding it and the name within it.
func (m *Mux) resolve(ctx context.Context, raw string, o openOptions) (FS, Location, error) {
	loc, err := Parse(raw)
	if err != nil {
		return nil, loc, err
	}
	if loc.IsLocal() {
		return o.local(), loc, nil
	}
	s, ok := m.schemes[loc.Scheme]
	if !ok {
		return nil, loc, fmt.Errorf("%s: %w %q: local paths and file:// are served, and the schemes a program registers (%s): import github.com/gdsload/gdsload/vfs/s3fs for s3:// and vfs/rdmafsfs for rdmafs://, or pass WithScheme", raw, ErrUnknownScheme, loc.Scheme, m.schemeNames())
	}
	key := loc.Scheme + "://" + loc.Authority
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, loc, ErrClosed
	}
	e := m.fss[key]
	if e == nil {
		e = &fsEntry{}
		m.fss[key] = e
	}
	m.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fs != nil {
		return e.fs, loc, nil
	}
	fsys, err := s.FS(ctx, loc.Authority)
	if err != nil {
		return nil, loc, err // not kept: a later call may reach the server
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		if c, ok := fsys.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, loc, ErrClosed
	}
	e.fs = fsys
	return fsys, loc, nil
}

// Stat describes the file or directory raw names, following a symbolic
// link. A missing one is an error matching fs.ErrNotExist.
func (m *Mux) Stat(ctx context.Context, raw string) (fs.FileInfo, error) {
	fsys, loc, err := m.resolve(ctx, raw, openOptions{})
	if err != nil {
		return nil, err
	}
	return fsys.Stat(ctx, loc.Path)
}

// Entry is a file or directory found by List or Walk.
type Entry struct {
	// URL opens the entry (Open), in the form of the URL or path listed:
	// a local path, or a URL of the listed one's scheme and authority.
	URL string
	// Rel is the entry's slash-separated path relative to the URL listed
	// or walked; for a walked file, its base name.
	Rel string
	// Info is what the listing said: size, mode, modification time. For
	// a symbolic link to a file, Walk gives the file's.
	Info fs.FileInfo

	fsys FS
	name string
}

// List returns the entries directly in directory raw, sorted by name.
func (m *Mux) List(ctx context.Context, raw string) ([]Entry, error) {
	fsys, loc, err := m.resolve(ctx, raw, openOptions{})
	if err != nil {
		return nil, err
	}
	infos, err := fsys.List(ctx, loc.Path)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(infos))
	for i, fi := range infos {
		l := loc.Join(fi.Name())
		out[i] = Entry{URL: l.String(), Rel: fi.Name(), Info: fi, fsys: fsys, name: l.Path}
	}
	return out, nil
}

// Walk finds the regular files at or below raw, sorted by Rel: raw itself
// when it is a file (Rel its base name), else every regular file in the
// tree below it. A symbolic link to a file is followed and listed with the
// file's Info; one to a directory is not followed (it could loop), and one
// whose target cannot be read is an error naming it. Other kinds of file
// (FIFOs, devices) are left out. An FS that is a Walker lists the tree in
// one pass.
func (m *Mux) Walk(ctx context.Context, raw string) ([]Entry, error) {
	fsys, loc, err := m.resolve(ctx, raw, openOptions{})
	if err != nil {
		return nil, err
	}
	fi, err := fsys.Stat(ctx, loc.Path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return nil, &regular.NotRegularError{Path: raw, Mode: fi.Mode()}
		}
		return []Entry{{URL: loc.String(), Rel: loc.Base(), Info: fi, fsys: fsys, name: loc.Path}}, nil
	}
	var out []Entry
	add := func(rel string, fi fs.FileInfo) {
		l := loc.Join(rel)
		out = append(out, Entry{URL: l.String(), Rel: rel, Info: fi, fsys: fsys, name: l.Path})
	}
	if w, ok := fsys.(Walker); ok {
		err = w.WalkFiles(ctx, loc.Path, func(rel string, fi fs.FileInfo) error { add(rel, fi); return nil })
	} else {
		err = walkList(ctx, fsys, loc, "", add)
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

// walkList walks the directory at loc/rel with List.
func walkList(ctx context.Context, fsys FS, loc Location, rel string, add func(string, fs.FileInfo)) error {
	dir := loc.Join(rel)
	infos, err := fsys.List(ctx, dir.Path)
	if err != nil {
		return err
	}
	for _, fi := range infos {
		child := path.Join(rel, fi.Name())
		switch {
		case fi.IsDir():
			if err := walkList(ctx, fsys, loc, child, add); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target := loc.Join(child)
			st, err := fsys.Stat(ctx, target.Path)
			if err != nil {
				return fmt.Errorf("%s: a symbolic link whose target cannot be read: %w", target, err)
			}
			if st.Mode().IsRegular() {
				add(child, st)
			}
		case fi.Mode().IsRegular():
			add(child, fi)
		}
	}
	return nil
}

// OpenOption says how a local file opens (other schemes ignore that), or
// which files OpenAll leaves out.
type OpenOption func(*openOptions) error

type openOptions struct {
	direct      loader.DirectMode
	bufferSmall bool
	skipDirs    []string
}

// WithDirect opens local files with O_DIRECT as mode says (default
// loader.DirectAuto: where the file system takes it).
func WithDirect(mode loader.DirectMode) OpenOption {
	return func(o *openOptions) error {
		if mode < loader.DirectAuto || mode > loader.DirectOff {
			return fmt.Errorf("direct mode %d: want loader.DirectAuto, DirectOn or DirectOff", mode)
		}
		o.direct = mode
		return nil
	}
}

// WithSmallFilesBuffered reads local files smaller than loader.SmallFile
// through the page cache under DirectAuto (loader.OpenFileForLoad), as a
// load of many small files wants.
func WithSmallFilesBuffered() OpenOption {
	return func(o *openOptions) error { o.bufferSmall = true; return nil }
}

// WithoutDirs has OpenAll leave out, below each directory it walks, the
// files inside a directory bearing one of these names, at any depth: the
// sidecar folder in which stage keeps its journal, for one. A directory
// that OpenAll is given opens whatever its own name.
func WithoutDirs(names ...string) OpenOption {
	return func(o *openOptions) error { o.skipDirs = append(o.skipDirs, names...); return nil }
}

// local is the local FS opening files as o says.
func (o openOptions) local() localFS { return localFS{direct: o.direct, bufferSmall: o.bufferSmall} }

// skipped reports whether rel, a walked file's path, lies in a directory
// WithoutDirs names.
func (o openOptions) skipped(rel string) bool {
	for dir := path.Dir(rel); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if slices.Contains(o.skipDirs, path.Base(dir)) {
			return true
		}
	}
	return false
}

func newOpenOptions(opts []OpenOption) (openOptions, error) {
	var o openOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Open opens the regular file raw names. A missing file is an error
// matching fs.ErrNotExist; a directory is refused.
func (m *Mux) Open(ctx context.Context, raw string, opts ...OpenOption) (File, error) {
	o, err := newOpenOptions(opts)
	if err != nil {
		return nil, err
	}
	fsys, loc, err := m.resolve(ctx, raw, o)
	if err != nil {
		return nil, err
	}
	return fsys.Open(ctx, loc.Path)
}

// OpenEntry opens a file that List or Walk found, without asking the
// storage again where its FS allows (InfoOpener).
func (m *Mux) OpenEntry(ctx context.Context, e Entry, opts ...OpenOption) (File, error) {
	if e.fsys == nil {
		return m.Open(ctx, e.URL, opts...)
	}
	o, err := newOpenOptions(opts)
	if err != nil {
		return nil, err
	}
	if _, local := e.fsys.(localFS); local {
		return o.local().Open(ctx, e.name)
	}
	if op, ok := e.fsys.(InfoOpener); ok && e.Info != nil && e.Info.Mode().IsRegular() {
		return op.OpenInfo(ctx, e.name, e.Info)
	}
	return e.fsys.Open(ctx, e.name)
}

// Files are opened files, in order.
type Files []File

// Sources returns the files as loader sources, in order.
func (files Files) Sources() []loader.Source {
	out := make([]loader.Source, len(files))
	for i, f := range files {
		out[i] = f
	}
	return out
}

// Names returns the files' names (their URLs or paths), in order.
func (files Files) Names() []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name()
	}
	return out
}

// Size is the files' total size.
func (files Files) Size() int64 {
	var n int64
	for _, f := range files {
		n += f.Size()
	}
	return n
}

// Close closes every file.
func (files Files) Close() error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// OpenAll opens what each of urls names, in order: a file, or every
// regular file below a directory (Walk's order). It is the way to turn a
// command line's paths and URLs into a load's sources: lay them out with
// loader.Landing.Jobs, load them, then Close the Files. Finding no file at
// all is an error; on any error nothing stays open.
func (m *Mux) OpenAll(ctx context.Context, urls []string, opts ...OpenOption) (Files, error) {
	o, err := newOpenOptions(opts)
	if err != nil {
		return nil, err
	}
	var out Files
	fail := func(err error) (Files, error) {
		_ = out.Close()
		return nil, err
	}
	for _, u := range urls {
		entries, err := m.Walk(ctx, u)
		if err != nil {
			return fail(err)
		}
		if len(o.skipDirs) > 0 {
			entries = slices.DeleteFunc(entries, func(e Entry) bool { return o.skipped(e.Rel) })
		}
		// Opened several at once (forEach), kept in order.
		opened := make(Files, len(entries))
		err = forEach(ctx, len(entries), func(i int) error {
			f, err := m.OpenEntry(ctx, entries[i], opts...)
			if err == nil {
				opened[i] = f
			}
			return err
		})
		for _, f := range opened {
			if f != nil {
				out = append(out, f)
			}
		}
		if err != nil {
			return fail(err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no files to load in %s", strings.Join(urls, " "))
	}
	return out, nil
}

// ReadFile reads the whole file raw names (a manifest, an index), refusing
// one larger than limit bytes before reading it.
func (m *Mux) ReadFile(ctx context.Context, raw string, limit int64) ([]byte, error) {
	f, err := m.Open(ctx, raw, WithDirect(loader.DirectOff))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for it", raw, f.Size(), limit)
	}
	b := make([]byte, f.Size())
	n, err := ReadAt(ctx, f, b, 0)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", raw, err)
	}
	return b, nil
}

// ReadAt reads from f with ctx when f can be cancelled
// (loader.ContextReaderAt), else with ReadAt.
func ReadAt(ctx context.Context, f loader.Source, p []byte, off int64) (int, error) {
	if c, ok := f.(loader.ContextReaderAt); ok {
		return c.ReadAtContext(ctx, p, off)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return f.ReadAt(p, off)
}

// NewReader reads f from start to end, each Read one ReadAt (with ctx
// where f takes it): a large Read of a remote file travels over all of its
// client's connections at once, so wrap it in a large bufio.Reader.
func NewReader(ctx context.Context, f loader.Source) io.Reader {
	return &sequential{ctx: ctx, f: f}
}

type sequential struct {
	ctx context.Context
	f   loader.Source
	off int64
}

func (s *sequential) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := ReadAt(s.ctx, s.f, p, s.off)
	s.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil // the next Read reports the end
	}
	return n, err
}
