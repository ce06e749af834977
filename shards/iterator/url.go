package iterator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// DefaultScanWorkers is how many shards of a URL dataset without a
// manifest Open scans at once.
const DefaultScanWorkers = 4

// MaxScanWorkers caps WithScanWorkers.
const MaxScanWorkers = 256

// OpenOption configures Open. Each option checks its value.
type OpenOption func(*openOptions) error

type openOptions struct {
	fs          *vfs.Mux
	reader      []webdataset.Option
	scanWorkers int
	scanCache   string // WithScanCache
}

// WithFS finds and reads a URL dataset through m; the caller closes m
// after the dataset and its iterators. Without it, Open makes a Mux with
// its defaults (rdmafs clients present GDSLOAD_TOKEN) that Dataset.Close
// closes.
func WithFS(m *vfs.Mux) OpenOption {
	return func(o *openOptions) error {
		if m == nil {
			return errors.New("iterator: WithFS(nil)")
		}
		o.fs = m
		return nil
	}
}

// WithReaderOptions configures the reading of shards that Open scans
// (webdataset's caps).
func WithReaderOptions(opts ...webdataset.Option) OpenOption {
	return func(o *openOptions) error { o.reader = append(o.reader, opts...); return nil }
}

// WithScanWorkers sets how many shards of a URL dataset without a manifest
// Open scans at once (DefaultScanWorkers, 1 to MaxScanWorkers).
func WithScanWorkers(n int) OpenOption {
	return func(o *openOptions) error {
		if n < 1 || n > MaxScanWorkers {
			return fmt.Errorf("iterator: %d scan workers: want 1 to %d", n, MaxScanWorkers)
		}
		o.scanWorkers = n
		return nil
	}
}

// openURL resolves a URL dataset source as Open describes, through o.fs.
func openURL(ctx context.Context, source string, o openOptions) (_ *Dataset, err error) {
	m, own := o.fs, o.fs == nil
	if own {
		if m, err = vfs.New(); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				_ = m.Close()
			}
		}()
	}
	ds, err := resolveURL(ctx, m, source, o)
	if err != nil {
		return nil, err
	}
	if own {
		ds.ownFS = m
	}
	return ds, nil
}

func resolveURL(ctx context.Context, m *vfs.Mux, source string, o openOptions) (*Dataset, error) {
	loc, err := vfs.Parse(source)
	if err != nil {
		return nil, err
	}
	if strings.Contains(loc.Path, "{") {
		return urlPattern(ctx, m, loc, o)
	}
	fi, err := m.Stat(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("iterator: dataset source: %w", err)
	}
	switch {
	case fi.IsDir():
		op := urlOpener{m: m, root: loc}
		mf, err := readManifest(ctx, m, loc.Join(webdataset.ManifestName).String())
		if err == nil {
			return fromManifestAt(op, mf), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		names, err := ShardFilesAt(ctx, m, source)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("iterator: no shards (%s) and no %s in %s", webdataset.ShardPatterns, webdataset.ManifestName, op.rootURL())
		}
		return scanURL(ctx, op, names, o)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("iterator: dataset source %s is neither a directory nor a regular file (%s)", source, fi.Mode().Type())
	case strings.HasSuffix(loc.Path, ".json"):
		mf, err := readManifest(ctx, m, source)
		if err != nil {
			return nil, err
		}
		return fromManifestAt(urlOpener{m: m, root: loc.Dir()}, mf), nil
	}
	return scanURL(ctx, urlOpener{m: m, root: loc.Dir()}, []string{loc.Base()}, openOptions{reader: o.reader, scanWorkers: 1})
}

// urlPattern expands a brace pattern whose shards are at a URL: names are
// relative to the directory before the first brace.
func urlPattern(ctx context.Context, m *vfs.Mux, loc vfs.Location, o openOptions) (*Dataset, error) {
	paths, err := webdataset.Expand(loc.Path)
	if err != nil {
		return nil, err
	}
	dir := ""
	if i := strings.LastIndexByte(loc.Path[:strings.IndexByte(loc.Path, '{')], '/'); i >= 0 {
		dir = loc.Path[:i]
	}
	root := loc
	root.Path = dir
	names := paths
	if dir != "" {
		names = make([]string, len(paths))
		for i, p := range paths {
			names[i] = strings.TrimPrefix(p, dir+"/") // expansions keep the text before the brace
		}
	}
	return scanURL(ctx, urlOpener{m: m, root: root}, names, o)
}

// readManifest reads and validates the dataset manifest at url.
func readManifest(ctx context.Context, m *vfs.Mux, url string) (*webdataset.Manifest, error) {
	b, err := m.ReadFile(ctx, url, webdataset.MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("iterator: reading manifest %s: %w", url, err)
	}
	return webdataset.DecodeManifest(b, url)
}

func fromManifestAt(op urlOpener, mf *webdataset.Manifest) *Dataset {
	ds := FromManifest(op.rootURL(), mf)
	ds.opener = op
	return ds
}

// scanURL reads each named shard once, o.scanWorkers at a time, to count
// its samples and take its CRC-32C.
func scanURL(ctx context.Context, op urlOpener, names []string, o openOptions) (*Dataset, error) {
	mf, err := webdataset.BuildManifestFrom(ctx, names, o.scanWorkers, func(ctx context.Context, name string) (webdataset.ShardEntry, error) {
		f, err := op.open(ctx, name)
		if err != nil {
			return webdataset.ShardEntry{}, err
		}
		defer f.Close()
		// Big buffered reads: each Read is a request, pipelined over the
		// client's connections when it spans several chunks.
		// As a local scan, only the CRC-32C that reads are checked against.
		opts := append([]webdataset.Option{webdataset.WithName(f.Name()), webdataset.WithSHA256(false)}, o.reader...)
		return webdataset.ScanShardReader(ctx, bufio.NewReaderSize(vfs.NewReader(ctx, f), 4<<20), name, opts...)
	}, o.reader...)
	if err != nil {
		return nil, err
	}
	return fromManifestAt(op, mf), nil
}

// urlOpener reads the shards of a dataset at a URL through a vfs.Mux:
// shard names are slash-separated and relative to root. It implements
// SourceOpener, so prefetch reads each shard through the loader, in
// parallel chunks (over all of an rdmafs client's connections).
type urlOpener struct {
	m    *vfs.Mux
	root vfs.Location
}

var (
	_ ShardOpener  = urlOpener{}
	_ SourceOpener = urlOpener{}
)

func (o urlOpener) rootURL() string { return o.root.String() }

func (o urlOpener) open(ctx context.Context, shard string) (vfs.File, error) {
	clean := path.Clean(shard)
	if clean != shard || strings.HasPrefix(clean, "../") || clean == ".." || path.IsAbs(clean) {
		return nil, fmt.Errorf("iterator: shard name %q is not a clean relative path", shard)
	}
	f, err := o.m.Open(ctx, o.root.Join(shard).String())
	if err != nil {
		return nil, fmt.Errorf("iterator: opening shard %s: %w", o.root.Join(shard), err)
	}
	return f, nil
}

// Open returns a stream over the shard; its reads honour ctx.
func (o urlOpener) Open(ctx context.Context, shard string) (io.ReadCloser, error) {
	f, err := o.open(ctx, shard)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{vfs.NewReader(ctx, f), f}, nil
}

// OpenSource returns the shard as a loader source named by its URL.
func (o urlOpener) OpenSource(ctx context.Context, shard string) (loader.Source, func() error, error) {
	f, err := o.open(ctx, shard)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}
