package stage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/gdsload/gdsload/internal/crc32c"
	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// The manifest (webdataset's index.json) beside files read through a
// vfs.Mux: what load, stage and manifest --verify check files against.

// ReadManifest reads and validates the manifest at p, a path or URL
// (rdmafs://, s3://) read through opts.FS (nil: a Mux made for the call):
// the manifest file, or the directory holding index.json.
func ReadManifest(ctx context.Context, p string, opts Options) (*webdataset.Manifest, error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return nil, err
	}
	defer done()
	if fi, err := m.Stat(ctx, p); err == nil && fi.IsDir() {
		p = vfs.Join(p, webdataset.ManifestName)
	}
	b, err := m.ReadFile(ctx, p, webdataset.MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	return webdataset.DecodeManifest(b, p)
}

// VerifyShards checks every shard man lists, beside it in dir (a local
// path or a URL, read through opts.FS; nil: a Mux made for the call), for
// size, SHA-256 and, where the entry has one, CRC-32C, reading each once
// in large sequential reads and calling opts.OnProgress, if set, with each
// shard's bytes once checked. The error names every shard that differs or
// cannot be read; cancelling ctx stops between shards.
func VerifyShards(ctx context.Context, dir string, man *webdataset.Manifest, opts Options) error {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return err
	}
	defer done()
	var errs []error
	for _, e := range man.Shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := verifyShardAt(ctx, m, vfs.Join(dir, e.Name), e); err != nil {
			errs = append(errs, err)
		}
		if opts.OnProgress != nil {
			opts.OnProgress(e.Bytes)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%d of %s in %s differ from the manifest:\n%w", len(errs), humanize.Count(len(man.Shards), "shard"), dir, err)
	}
	return nil
}

// ShardFiles is webdataset.ShardFiles for a directory, prefix or local
// path that opts.FS serves (nil: a Mux made for the call), such as
// s3://BUCKET/PREFIX/ or rdmafs://HOST:PORT/DIR: the shards below dir,
// subfolders included but for those whose names begin with a dot, as
// slash-separated paths relative to dir sorted by name. Shards that
// webdataset.UnreadShard refuses are an error wrapping
// webdataset.ErrUnreadShards naming each.
func ShardFiles(ctx context.Context, dir string, opts Options) ([]string, error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return nil, err
	}
	defer done()
	rels, err := m.WalkRels(ctx, dir)
	if err != nil {
		return nil, err
	}
	return webdataset.SelectShards(dir, rels)
}

// CheckListed compares the shards in dir (ShardFiles: subfolders
// included) with those man lists, and returns an error wrapping
// webdataset.ErrUnlisted that names each shard found but not listed, so
// that a verified manifest is also a complete one.
func CheckListed(ctx context.Context, dir string, man *webdataset.Manifest, opts Options) error {
	names, err := ShardFiles(ctx, dir, opts)
	if err != nil {
		return err
	}
	return webdataset.CheckListed(dir, names, man)
}

func verifyShardAt(ctx context.Context, m *vfs.Mux, u string, e webdataset.ShardEntry) error {
	f, err := m.Open(ctx, u)
	if err != nil {
		return fmt.Errorf("verifying shard %s: %w", e.Name, err)
	}
	defer f.Close()
	if f.Size() != e.Bytes {
		return fmt.Errorf("shard %s (%s): %w: %d bytes stored, %d in manifest", e.Name, u, webdataset.ErrShardSize, f.Size(), e.Bytes)
	}
	h, crc := sha256.New(), crc32c.New()
	// 8 MiB reads: a remote file reads each over its connections at once.
	if _, err := io.Copy(io.MultiWriter(h, crc), bufio.NewReaderSize(vfs.NewReader(ctx, f), 8<<20)); err != nil {
		return fmt.Errorf("verifying shard %s (%s): %w", e.Name, u, err)
	}
	if err := webdataset.CheckShardSHA256(e, h.Sum(nil)); err != nil {
		return err
	}
	return webdataset.CheckShardCRC32C(e, crc.Sum32())
}

// manifests finds the manifest (index.json) of directories through a
// vfs.Mux, reading each directory's once. It is safe for concurrent use.
type manifests struct {
	m     *vfs.Mux
	mu    sync.Mutex
	byDir map[string]*webdataset.ManifestIndex
}

// newManifests looks manifests up through m.
func newManifests(m *vfs.Mux) *manifests {
	return &manifests{m: m, byDir: map[string]*webdataset.ManifestIndex{}}
}

// in returns the manifest of directory dir (a path or URL): nil, nil when
// it has none or its index.json is JSON of another kind; an error
// wrapping ErrManifest when index.json is not a valid manifest.
func (s *manifests) in(ctx context.Context, dir string) (*webdataset.ManifestIndex, error) {
	s.mu.Lock()
	ix, seen := s.byDir[dir]
	s.mu.Unlock()
	if seen {
		return ix, nil
	}
	where := vfs.Join(dir, webdataset.ManifestName)
	b, err := s.m.ReadFile(ctx, where, webdataset.MaxManifestBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ix = nil
	case err != nil:
		return nil, fmt.Errorf("manifest %s: %w", where, err)
	default:
		if ix, err = webdataset.ParseManifestIndex(b, where); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.byDir[dir] = ix
	s.mu.Unlock()
	return ix, nil
}

// Check is a file's entry in a manifest.
type Check struct {
	Entry    webdataset.ShardEntry
	Manifest string // where the manifest was read
}

// Checks are the manifest entries of a load's files, by the files' names
// (paths or URLs, as vfs names the opened files).
type Checks map[string]Check

// ManifestChecks finds the entry of each file (a path or URL, read through
// opts.FS; nil: a Mux made for the call) in the manifest beside it, reading
// each folder's manifest once. Files no manifest lists are left out; an
// invalid manifest is an error wrapping webdataset.ErrManifest.
func ManifestChecks(ctx context.Context, files []string, opts Options) (Checks, error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return nil, err
	}
	defer done()
	s := newManifests(m)
	out := Checks{}
	for _, f := range files {
		ix, err := s.in(ctx, vfs.Dir(f))
		if err != nil {
			return nil, err
		}
		if e, ok := ix.Lookup(vfs.Base(f)); ok {
			out[f] = Check{Entry: e, Manifest: ix.Path}
		}
	}
	return out, nil
}

// CheckSizes refuses, before anything is read, a source whose size is not
// the one its manifest lists.
func (c Checks) CheckSizes(srcs []loader.Source) error {
	for _, s := range srcs {
		if k, ok := c[s.Name()]; ok {
			if err := k.Entry.CheckSize(s.Name(), s.Size(), k.Manifest); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckDigests compares each loaded file's SHA-256 with its manifest
// entry; the load must have computed SHA-256 digests.
func (c Checks) CheckDigests(files []loader.FileResult) error {
	for _, f := range files {
		if k, ok := c[f.Name]; ok {
			if err := k.Entry.CheckDigest(f.Name, f.SHA256, k.Manifest); err != nil {
				return err
			}
		}
	}
	return nil
}
