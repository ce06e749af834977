package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// Entry is one file to stage.
type Entry struct {
	// Source is what Options.FS opens: a local path or a URL.
	Source string
	// Rel is the slash-separated path of the file under the destination.
	Rel string
	// Size is the source's size when listed; -1 when only opening tells.
	Size int64
	// ModTime is the source's modification time when listed; zero when
	// unknown, and then the file is never trusted as already staged. The
	// staged file gets it, as `cp -p` and rclone give theirs.
	ModTime time.Time
	// Mode is a local source's permission bits, which the staged file
	// keeps; 0 for a remote one (an object store has no file modes), whose
	// copy is created 0644 less the umask.
	Mode fs.FileMode
	// Expect is the sha256 a shards manifest promises for the file ("" if
	// none), and Manifest the manifest's path.
	Expect, Manifest string
}

// maxBraceNames bounds a brace pattern on the command line.
const maxBraceNames = 1_000_000

// Expand turns sources (local paths or URLs that opts.FS serves) into
// entries, in order:
//   - a file lands under its base name;
//   - a directory puts its files (recursively, keeping relative paths,
//     following links to files) directly into the destination, as
//     `rsync SRC/ DST` does, leaving out a sidecar folder and temporary
//     files of an earlier stage;
//   - a brace pattern ("shard-{000..009}.bin") expands first;
//   - a *.safetensors.index.json brings the index and every file of its
//     weight_map, keeping their paths relative to the index.
//
// Local paths and URLs (rdmafs://host/path, s3://bucket/key) are treated
// alike. A shards manifest (index.json with per-shard sha256) in a source
// directory, or beside a file, sets Expect for the files it lists, and a
// file whose size differs from the one listed is refused. Two sources that
// would land on the same path are an error naming both. Of opts, only FS
// is used: nil is a Mux with its defaults, made and closed for the call;
// pass the same Options to Open.
func Expand(ctx context.Context, sources []string, opts Options) (_ []Entry, err error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return nil, err
	}
	defer done()
	x := expander{ctx: ctx, m: m, manifests: newManifests(m), byRel: map[string]string{}}
	for _, s := range sources {
		names := []string{s}
		if strings.Contains(s, "{") {
			if names, err = webdataset.ExpandN(s, maxBraceNames); err != nil {
				return nil, fmt.Errorf("source %q: %w", s, err)
			}
		}
		for _, name := range names {
			if err := x.add(name); err != nil {
				return nil, err
			}
		}
	}
	if len(x.out) == 0 {
		return nil, fmt.Errorf("no files to stage in %v", sources)
	}
	return x.out, nil
}

type expander struct {
	ctx       context.Context
	m         *vfs.Mux
	manifests *manifests
	out       []Entry
	byRel     map[string]string // Rel → Source, for collisions
}

func (x *expander) add(name string) error {
	st, err := x.m.Stat(x.ctx, name)
	if err != nil {
		return sourceError(name, err)
	}
	switch {
	case st.IsDir():
		return x.addDir(name)
	case !st.Mode().IsRegular():
		return fmt.Errorf("source %s: not a regular file or directory (%s)", name, st.Mode().Type())
	case strings.HasSuffix(name, ".safetensors.index.json"):
		return x.addIndex(name, st)
	}
	return x.addFile(name, vfs.Base(name), st, vfs.Dir(name), vfs.Base(name))
}

func (x *expander) addDir(root string) error {
	entries, err := x.m.Walk(x.ctx, root)
	if err != nil {
		return sourceError(root, err)
	}
	for _, e := range entries {
		if inSidecar(e.Rel) || durable.IsTempName(path.Base(e.Rel)) {
			continue
		}
		if err := x.addFile(e.URL, e.Rel, e.Info, root, e.Rel); err != nil {
			return err
		}
	}
	return nil
}

// inSidecar reports whether rel lies in a stage sidecar folder.
func inSidecar(rel string) bool {
	dir := path.Dir(rel)
	for dir != "." && dir != "/" {
		if path.Base(dir) == SidecarName {
			return true
		}
		dir = path.Dir(dir)
	}
	return false
}

func (x *expander) addIndex(name string, st fs.FileInfo) error {
	b, err := x.m.ReadFile(x.ctx, name, safetensors.MaxIndexSize)
	if err != nil {
		return sourceError(name, err)
	}
	ix, err := safetensors.DecodeIndex(b, name)
	if err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	dir := vfs.Dir(name)
	if err := x.addFile(name, vfs.Base(name), st, dir, vfs.Base(name)); err != nil {
		return err
	}
	for _, f := range ix.Files {
		p := vfs.Join(dir, f)
		fst, err := x.m.Stat(x.ctx, p)
		if err != nil {
			return fmt.Errorf("shard %s of %s: %w", f, name, sourceError(p, err))
		}
		if err := x.addFile(p, f, fst, dir, f); err != nil {
			return err
		}
	}
	return nil
}

// addFile emits a file; manifestDir and manifestName say where a manifest
// listing it would be and under which name.
func (x *expander) addFile(p, rel string, st fs.FileInfo, manifestDir, manifestName string) error {
	e := Entry{Source: p, Rel: rel, Size: st.Size(), ModTime: st.ModTime()}
	if !vfs.IsURL(p) {
		e.Mode = st.Mode().Perm()
	}
	ix, err := x.manifests.in(x.ctx, manifestDir)
	if err != nil {
		return err
	}
	if s, ok := ix.Lookup(manifestName); ok {
		if err := s.CheckSize("source "+p, e.Size, ix.Path); err != nil {
			return err
		}
		e.Expect, e.Manifest = s.SHA256, ix.Path
	}
	return x.emit(e)
}

func (x *expander) emit(e Entry) error {
	if prev, dup := x.byRel[e.Rel]; dup {
		if prev == e.Source {
			return nil // named twice (a file and its directory): stage once
		}
		return fmt.Errorf("sources %s and %s would both be staged as %s; stage them into different destinations", prev, e.Source, e.Rel)
	}
	x.byRel[e.Rel] = e.Source
	x.out = append(x.out, e)
	return nil
}

// sourceError says what is wrong with a source and what to do; the
// SourceError wraps the cause.
func sourceError(p string, err error) error {
	var se *SourceError
	if errors.As(err, &se) {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &SourceError{p, "does not exist (or vanished while being listed); check the path", err}
	case errors.Is(err, fs.ErrPermission):
		return &SourceError{p, "is not readable: permission denied; stage it as a user who can read it", err}
	}
	return &SourceError{p, "", err}
}

// Sentinels a SourceError may wrap.
var (
	// ErrSourceChanged: a source changed between its listing and its copy.
	ErrSourceChanged = errors.New("source changed during the stage")
	// ErrManifestMismatch: a source's digest differs from its manifest's.
	ErrManifestMismatch = errors.New("source does not match its manifest")
)

// SourceError is a failure that concerns one source file only (it cannot
// be opened or read, it changed, it does not match its manifest), as
// opposed to the destination or the run. Unless Options.FailFast, a run
// records it against that file and stages the others.
type SourceError struct {
	Source string
	// Hint says what went wrong in words, and what to do ("" to show Err).
	Hint string
	Err  error
}

func (e *SourceError) Error() string {
	if e.Hint != "" {
		return fmt.Sprintf("source %s %s", e.Source, e.Hint)
	}
	return fmt.Sprintf("source %s: %v", e.Source, e.Err)
}

func (e *SourceError) Unwrap() error { return e.Err }
