package iterator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// Shard is one shard as the iterator sees it.
type Shard struct {
	// Name is what the ShardOpener opens: a slash-separated path relative to
	// the dataset root.
	Name string
	// Bytes is the stored size; Samples the number of samples.
	Bytes, Samples int64
	// SampleBytes is the total field bytes of the shard's samples, the
	// memory that holding them costs; 0 means unknown (Bytes is used).
	SampleBytes int64
	// SHA256 and CRC32C of the stored bytes, hex; empty when unknown. One
	// is checked on every read (CRC32C when known, unless Options.SHA256)
	// unless Options.SkipChecksum.
	SHA256, CRC32C string
	// SplitFirst: the shard's first sample continues the previous shard's
	// last (see webdataset.ShardEntry.SplitFirst); both parts are yielded.
	SplitFirst bool
}

func (s Shard) memBytes() int64 {
	if s.SampleBytes > 0 {
		return s.SampleBytes
	}
	return s.Bytes
}

// Dataset is an ordered list of shards under one root directory (a path,
// or a URL for a dataset that Open found through a vfs.Mux).
type Dataset struct {
	Root   string
	Shards []Shard

	opener ShardOpener         // reads a URL dataset's shards; nil: DirOpener
	ownFS  *vfs.Mux            // made by Open, closed by Close
	reader []webdataset.Option // WithReaderOptions: scanning and decoding
}

// Close releases what Open acquired for the dataset: the vfs.Mux it made
// for a URL when no WithFS was given (closing the clients it dialled).
// Iterators over the dataset must be closed first. Calling it again, or on
// a Dataset not made by Open, does nothing.
func (d *Dataset) Close() error {
	if d.ownFS == nil {
		return nil
	}
	err := d.ownFS.Close()
	d.ownFS = nil
	return err
}

// Samples returns the number of samples in the dataset.
func (d *Dataset) Samples() int64 {
	var n int64
	for _, s := range d.Shards {
		n += s.Samples
	}
	return n
}

// Warnings describes what in the dataset iterating handles but users
// should know of: samples split across two shards (yielded as two samples
// with the same key).
func (d *Dataset) Warnings() []string {
	m := &webdataset.Manifest{}
	for _, s := range d.Shards {
		m.Shards = append(m.Shards, webdataset.ShardEntry{Name: s.Name, SplitFirst: s.SplitFirst})
	}
	return m.Warnings()
}

// Fingerprint identifies the dataset for resumption: a hash of everything
// that shapes the epoch order (shard names in order, sizes, sample counts,
// sample bytes). A state taken on one dataset is refused on another.
func (d *Dataset) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "gdsload-iterator-v1\n")
	for _, s := range d.Shards {
		fmt.Fprintf(h, "%q %d %d %d\n", s.Name, s.Bytes, s.Samples, s.SampleBytes)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// FromManifest makes a Dataset from a manifest whose shards live in root;
// opts configure the decoding of its shards (webdataset's caps), as
// WithReaderOptions does for Open.
func FromManifest(root string, m *webdataset.Manifest, opts ...webdataset.Option) *Dataset {
	d := &Dataset{Root: root, reader: opts}
	for _, e := range m.Shards {
		d.Shards = append(d.Shards, shardOf(e, e.Name))
	}
	return d
}

// Open resolves a dataset source, a local path or a URL (rdmafs://,
// s3://, anything the WithFS Mux serves; rdmafs://HOST:PORT/ for a
// server's export root):
//   - a directory with index.json: its manifest;
//   - a directory without one: every shard in it (*.tar, *.tar.gz, *.tgz,
//     *.tar.zst), sorted by name, scanned now;
//   - a path ending in ".json": that manifest, shards beside it;
//   - a brace pattern ("dir/shard-{000..009}.tar"): the expanded shards,
//     scanned now, named relative to the directory before the first brace;
//   - any other path: that single shard, scanned now.
//
// Scanning reads each shard once to count its samples (over the network
// for a URL: run 'gdsload manifest' where the shards are to skip it); with
// WithScanCache, a local shard scanned before and unchanged since is not
// read at all.
// Shard names, sizes and sample counts come out the same for the same
// files on a disk or a server, so the epoch order, a function of them, is
// the same too. A local directory's shards are scanned several at a time
// (see scanner), taking each shard's CRC-32C, not its SHA-256. With
// webdataset.WithShardErrorHandler among WithReaderOptions, shards that
// fail to scan are handed to it and, if it says so, left out of the
// dataset (and of its fingerprint). Iterators made with New read a URL
// dataset's shards
// through the same Mux. A missing source is an error matching
// fs.ErrNotExist. Close the Dataset when done with it.
func Open(ctx context.Context, source string, opts ...OpenOption) (*Dataset, error) {
	o := openOptions{scanWorkers: DefaultScanWorkers}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	loc, err := vfs.Parse(source)
	var d *Dataset
	switch {
	case err != nil && vfs.IsURL(source):
		return nil, fmt.Errorf("dataset source: %w", err)
	case err == nil && !loc.IsLocal():
		d, err = openURL(ctx, source, o)
	case err == nil:
		source = loc.Path // a file:// URL names a local path
		fallthrough
	default:
		d, err = openLocal(ctx, source, o)
	}
	if err != nil {
		return nil, err
	}
	d.reader = o.reader // its iterators decode with them
	return d, nil
}

// openLocal resolves a local dataset source, as Open describes.
func openLocal(ctx context.Context, source string, o openOptions) (*Dataset, error) {
	opts := o.reader
	if strings.Contains(source, "{") {
		return openPattern(ctx, source, opts, o.scanCache)
	}
	fi, err := os.Stat(source)
	if err != nil {
		return nil, fmt.Errorf("dataset source: %w", err)
	}
	switch {
	case !fi.IsDir() && !fi.Mode().IsRegular():
		return nil, fmt.Errorf("dataset source %s is neither a directory nor a regular file (%s)", source, fi.Mode().Type())
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(source, webdataset.ManifestName)); err == nil {
			m, err := webdataset.ReadManifest(source)
			if err != nil {
				return nil, err
			}
			return FromManifest(source, m), nil
		}
		names, _, err := webdataset.ShardFiles(source)
		if err != nil {
			return nil, err
		}
		sc := newScanner(opts, o.scanCache)
		defer sc.close()
		m, err := webdataset.BuildManifestFrom(ctx, names, scanWorkers(), func(ctx context.Context, name string) (webdataset.ShardEntry, error) {
			return sc.scan(ctx, filepath.Join(source, name))
		}, opts...)
		if err != nil {
			return nil, err
		}
		if len(m.Shards) == 0 {
			if len(names) > 0 {
				return nil, fmt.Errorf("none of the %d shards in %s could be read", len(names), source)
			}
			return nil, fmt.Errorf("no shards (%s) in %s", webdataset.ShardPatterns, source)
		}
		return FromManifest(source, m), nil
	case strings.HasSuffix(source, ".json"):
		m, err := webdataset.ReadManifest(source)
		if err != nil {
			return nil, err
		}
		return FromManifest(filepath.Dir(source), m), nil
	}
	sc := newScanner(opts, o.scanCache)
	defer sc.close()
	m, err := webdataset.BuildManifestFrom(ctx, []string{source}, 1, sc.scan, opts...)
	if err != nil {
		return nil, err
	}
	if len(m.Shards) == 0 {
		return nil, fmt.Errorf("shard %s could not be read", source)
	}
	return &Dataset{Root: filepath.Dir(source), Shards: []Shard{shardOf(m.Shards[0], filepath.Base(source))}}, nil
}

func openPattern(ctx context.Context, pattern string, opts []webdataset.Option, cacheDir string) (*Dataset, error) {
	paths, err := webdataset.Expand(pattern)
	if err != nil {
		return nil, err
	}
	root := "."
	if i := strings.LastIndexByte(pattern[:strings.IndexByte(pattern, '{')], '/'); i >= 0 {
		root = pattern[:i+1]
	}
	d := &Dataset{Root: filepath.Clean(root)}
	// The shards are scanned in parallel, as a directory's are.
	sc := newScanner(opts, cacheDir)
	defer sc.close()
	m, err := webdataset.BuildManifestFrom(ctx, paths, scanWorkers(), sc.scan, opts...)
	if err != nil {
		return nil, err
	}
	if len(m.Shards) == 0 {
		return nil, fmt.Errorf("none of the %d shards of %s could be read", len(paths), pattern)
	}
	for _, e := range m.Shards { // e.Name is the path scanned
		rel, err := filepath.Rel(d.Root, e.Name)
		if err != nil {
			return nil, fmt.Errorf("shard %s outside %s: %w", e.Name, d.Root, err)
		}
		d.Shards = append(d.Shards, shardOf(e, filepath.ToSlash(rel)))
	}
	return d, nil
}

func shardOf(e webdataset.ShardEntry, name string) Shard {
	return Shard{Name: name, Bytes: e.Bytes, Samples: e.Samples, SampleBytes: e.SampleBytes, SHA256: e.SHA256, CRC32C: e.CRC32C, SplitFirst: e.SplitFirst}
}
