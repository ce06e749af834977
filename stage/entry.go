package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// Entry is one file to stage.
type Entry struct {
	// Source is the name the Opener opens: a local path or a URL.
	Source string
	// Rel is the slash-separated path of the file under the destination.
	Rel string
	// Size is the source's size when listed; -1 when only opening tells.
	Size int64
	// ModTime is the source's modification time when listed; zero when
	// unknown, and then the file is never trusted as already staged.
	ModTime time.Time
	// Expect is the sha256 a shards manifest promises for the file ("" if
	// none), and Manifest the manifest's path.
	Expect, Manifest string
}

// Lister lists what a remote URL names: the file itself, or every file
// below a directory, each with Source (a URL the Opener opens), Rel
// relative to the listed URL (a file's base name for a file), Size and,
// when known, ModTime. The command line lists rdmafs:// URLs with it.
type Lister interface {
	List(ctx context.Context, url string) ([]Entry, error)
}

// maxBraceNames bounds a brace pattern on the command line.
const maxBraceNames = 1_000_000

// Expand turns sources into entries, in order:
//   - a file lands under its base name;
//   - a directory puts its files (recursively, keeping relative paths)
//     directly into the destination, as `rsync SRC/ DST` does, leaving out
//     a sidecar folder and temporary files of an earlier stage;
//   - a brace pattern ("shard-{000..009}.bin") expands first;
//   - a *.safetensors.index.json brings the index and every file of its
//     weight_map, keeping their paths relative to the index;
//   - a URL ("rdmafs://host/path") is what lister lists: a file under its
//     base name, a directory's files directly into the destination; with
//     a nil lister, a file under its base name and a trailing slash is
//     refused. A remote *.safetensors.index.json is refused: name the
//     index and its shards instead.
//
// A shards manifest (index.json with per-shard sha256) in a source
// directory, or beside a file, sets Expect for the files it lists. Two
// sources that would land on the same path are an error naming both.
func Expand(ctx context.Context, sources []string, lister Lister) ([]Entry, error) {
	x := expander{ctx: ctx, lister: lister, manifests: map[string]*manifest{}, byRel: map[string]string{}}
	for _, s := range sources {
		names := []string{s}
		if strings.Contains(s, "{") {
			var err error
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
	lister    Lister
	out       []Entry
	manifests map[string]*manifest // by directory; nil when it has none
	byRel     map[string]string    // Rel → Source, for collisions
}

func (x *expander) add(name string) error {
	if isURL(name) {
		u, err := url.Parse(name)
		if err != nil {
			return fmt.Errorf("source %q: %w", name, err)
		}
		base := path.Base(u.Path)
		if strings.HasSuffix(base, ".safetensors.index.json") {
			return fmt.Errorf("source %s: staging a remote checkpoint through its index is not supported yet; name the index and its shards (a brace pattern works)", name)
		}
		if x.lister != nil {
			es, err := x.lister.List(x.ctx, name)
			if err != nil {
				return fmt.Errorf("listing source %s: %w", name, err)
			}
			for _, e := range es {
				if err := x.emit(e); err != nil {
					return err
				}
			}
			return nil
		}
		if base == "." || base == "/" || strings.HasSuffix(u.Path, "/") {
			return fmt.Errorf("source %s: staging a remote directory needs a lister; name its files (a brace pattern works)", name)
		}
		return x.emit(Entry{Source: name, Rel: base, Size: -1})
	}
	st, err := os.Stat(name)
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
	return x.addFile(name, filepath.Base(name), st, filepath.Dir(name), filepath.Base(name))
}

func (x *expander) addDir(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return sourceError(p, err)
		}
		if d.IsDir() && d.Name() == SidecarName && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || loader.IsTempName(d.Name()) {
			return nil
		}
		st, err := os.Stat(p) // follows a symlink to the file it names
		if err != nil {
			return sourceError(p, err)
		}
		if !st.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return x.addFile(p, filepath.ToSlash(rel), st, root, filepath.ToSlash(rel))
	})
}

func (x *expander) addIndex(name string, st os.FileInfo) error {
	ix, err := safetensors.ParseIndex(name)
	if err != nil {
		return fmt.Errorf("source %s: %w", name, err)
	}
	dir := filepath.Dir(name)
	if err := x.addFile(name, filepath.Base(name), st, dir, filepath.Base(name)); err != nil {
		return err
	}
	for i, p := range ix.FilePaths() {
		fst, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("shard %s of %s: %w", ix.Files[i], name, sourceError(p, err))
		}
		if err := x.addFile(p, ix.Files[i], fst, dir, ix.Files[i]); err != nil {
			return err
		}
	}
	return nil
}

// addFile emits a local file; manifestDir and manifestName say where a
// manifest listing it would be and under which name.
func (x *expander) addFile(p, rel string, st os.FileInfo, manifestDir, manifestName string) error {
	e := Entry{Source: p, Rel: rel, Size: st.Size(), ModTime: st.ModTime()}
	m, err := x.manifest(manifestDir)
	if err != nil {
		return err
	}
	if m != nil {
		if s, ok := m.shards[manifestName]; ok {
			if s.Bytes != e.Size {
				return fmt.Errorf("source %s is %d bytes, but the manifest %s lists %d; the source or the manifest is stale", p, e.Size, m.path, s.Bytes)
			}
			e.Expect, e.Manifest = s.SHA256, m.path
		}
	}
	return x.emit(e)
}

func (x *expander) manifest(dir string) (*manifest, error) {
	if m, ok := x.manifests[dir]; ok {
		return m, nil
	}
	m, err := readManifest(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	x.manifests[dir] = m
	return m, nil
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

func isURL(s string) bool { return strings.Contains(s, "://") }

// sourceError says what is wrong with a source and what to do.
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
