package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// maxRemoteManifest bounds the index.json read from a server: a manifest
// line is about 150 bytes, so this is over a million shards.
const maxRemoteManifest = 256 << 20

// openRemoteDataset resolves an rdmafs://HOST:PORT/PATH dataset source the
// way iterator.Open resolves a local one:
//   - a directory with index.json: its manifest;
//   - a directory without one: every shard directly in it (*.tar, *.tar.gz,
//     *.tgz, *.tar.zst), sorted by name, each read once now to count its
//     samples;
//   - a path ending in ".json": that manifest, shards beside it;
//   - a brace pattern ("dir/shard-{000..009}.tar"): the expanded shards,
//     scanned now, named relative to the directory before the first brace;
//   - any other path: that single shard, scanned now.
//
// Shard names, sizes and sample counts come out as they would for the same
// files on a local disk, so the epoch order (a function of them) is the
// same. The opener reads shards from the server.
func openRemoteDataset(ctx context.Context, raw string, r *remoteOptions) (*iterator.Dataset, iterator.ShardOpener, error) {
	u, err := rdmafs.ParseURL(raw)
	if err != nil {
		return nil, nil, usageError{err}
	}
	c, err := r.client(ctx, u.Addr)
	if err != nil {
		return nil, nil, err
	}
	p := strings.Trim(u.Path, "/")
	if strings.Contains(p, "{") {
		return remotePattern(ctx, c, u.Addr, p, r.connections)
	}
	isDir := p == ""
	if !isDir {
		fi, err := c.Stat(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		isDir = fi.IsDir()
	}
	switch {
	case isDir:
		op := remoteShardOpener{c: c, addr: u.Addr, dir: p}
		m, err := readRemoteManifest(ctx, c, u.Addr, path.Join(p, webdataset.ManifestName))
		if err == nil {
			return iterator.FromManifest(op.root(), m), op, nil
		}
		if !errors.Is(err, rdmafs.ErrNotFound) {
			return nil, nil, err
		}
		names, err := remoteShardNames(ctx, c, p)
		if err != nil {
			return nil, nil, err
		}
		if len(names) == 0 {
			return nil, nil, fmt.Errorf("no shards (*.tar, *.tar.gz, *.tgz, *.tar.zst) and no %s in %s", webdataset.ManifestName, op.root())
		}
		return scanRemote(ctx, op, names, r.connections)
	case strings.HasSuffix(p, ".json"):
		op := remoteShardOpener{c: c, addr: u.Addr, dir: path.Dir(p)}
		m, err := readRemoteManifest(ctx, c, u.Addr, p)
		if err != nil {
			return nil, nil, err
		}
		return iterator.FromManifest(op.root(), m), op, nil
	}
	op := remoteShardOpener{c: c, addr: u.Addr, dir: path.Dir(p)}
	return scanRemote(ctx, op, []string{path.Base(p)}, 1)
}

// remotePattern expands a brace pattern whose shards live on the server.
func remotePattern(ctx context.Context, c *rdmafs.Client, addr, pattern string, workers int) (*iterator.Dataset, iterator.ShardOpener, error) {
	paths, err := webdataset.Expand(pattern)
	if err != nil {
		return nil, nil, usageError{err}
	}
	dir := ""
	if i := strings.LastIndexByte(pattern[:strings.IndexByte(pattern, '{')], '/'); i >= 0 {
		dir = pattern[:i]
	}
	op := remoteShardOpener{c: c, addr: addr, dir: dir}
	names := paths
	if dir != "" {
		names = make([]string, len(paths))
		for i, p := range paths {
			names[i] = strings.TrimPrefix(p, dir+"/") // expansions keep the text before the brace
		}
	}
	return scanRemote(ctx, op, names, workers)
}

// readRemoteManifest reads and validates the manifest at name. A missing
// manifest is an error wrapping rdmafs.ErrNotFound.
func readRemoteManifest(ctx context.Context, c *rdmafs.Client, addr, name string) (*webdataset.Manifest, error) {
	url := rdmafs.URL{Addr: addr, Path: name}.String()
	f, err := c.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", url, err)
	}
	if f.Size() > maxRemoteManifest {
		return nil, fmt.Errorf("manifest %s is %d bytes, over the %d-byte limit: is it really a gdsload manifest?", url, f.Size(), maxRemoteManifest)
	}
	b := make([]byte, f.Size())
	if _, err := f.ReadAtContext(ctx, b, 0); err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", url, err)
	}
	return webdataset.DecodeManifest(b, url)
}

// remoteShardNames lists the shard files directly in dir, sorted.
func remoteShardNames(ctx context.Context, c *rdmafs.Client, dir string) ([]string, error) {
	ents, err := c.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Mode().IsRegular() && webdataset.IsShardName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// scanRemote reads each named shard once, several at a time, to count its
// samples and hash it, and returns the dataset they make.
func scanRemote(ctx context.Context, op remoteShardOpener, names []string, workers int) (*iterator.Dataset, iterator.ShardOpener, error) {
	m, err := webdataset.BuildManifestFrom(ctx, names, workers, func(ctx context.Context, name string) (webdataset.ShardEntry, error) {
		rc, err := op.Open(ctx, name)
		if err != nil {
			return webdataset.ShardEntry{}, err
		}
		defer rc.Close()
		// Big buffered reads: each Read is a request, pipelined over the
		// client's connections when it spans several chunks.
		return webdataset.ScanShardReader(ctx, bufio.NewReaderSize(rc, 4<<20), name, webdataset.WithName(op.url(name)))
	})
	if err != nil {
		return nil, nil, err
	}
	return iterator.FromManifest(op.root(), m), op, nil
}

// remoteShardOpener is the iterator's ShardOpener over an rdmafs client:
// shard names are relative to dir on the server. It also implements
// iterator.SourceOpener, so prefetch reads each shard through the loader,
// in parallel chunks spread over the client's connections.
type remoteShardOpener struct {
	c    *rdmafs.Client
	addr string
	dir  string // "" or "." for the export root
}

var (
	_ iterator.ShardOpener  = remoteShardOpener{}
	_ iterator.SourceOpener = remoteShardOpener{}
)

func (o remoteShardOpener) name(shard string) string { return path.Join(o.dir, shard) }

func (o remoteShardOpener) url(shard string) string {
	return rdmafs.URL{Addr: o.addr, Path: o.name(shard)}.String()
}

// root is the dataset's root as a URL, for messages.
func (o remoteShardOpener) root() string {
	dir := path.Clean(o.dir)
	if dir == "." {
		dir = ""
	}
	return rdmafs.URL{Addr: o.addr, Path: dir}.String()
}

func (o remoteShardOpener) open(ctx context.Context, shard string) (*rdmafs.File, error) {
	f, err := o.c.Open(ctx, o.name(shard))
	if err != nil {
		return nil, fmt.Errorf("opening shard %s: %w", o.url(shard), err)
	}
	return f, nil
}

// Open returns a stream over the shard; its reads honour ctx.
func (o remoteShardOpener) Open(ctx context.Context, shard string) (io.ReadCloser, error) {
	f, err := o.open(ctx, shard)
	if err != nil {
		return nil, err
	}
	return &remoteStream{ctx: ctx, f: f}, nil
}

// OpenSource returns the shard as a loader source named by its URL.
func (o remoteShardOpener) OpenSource(ctx context.Context, shard string) (loader.Source, func() error, error) {
	f, err := o.open(ctx, shard)
	if err != nil {
		return nil, nil, err
	}
	// An rdmafs File holds no server state: nothing to release.
	return remoteSource{File: f, url: o.url(shard)}, func() error { return nil }, nil
}

// remoteStream reads a remote file from start to end. Each Read is one
// ReadAtContext, so a large Read is split into chunks that travel over all
// of the client's connections at once.
type remoteStream struct {
	ctx context.Context
	f   *rdmafs.File
	off int64
}

func (s *remoteStream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := s.f.ReadAtContext(s.ctx, p, s.off)
	s.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil // the next Read reports the end
	}
	return n, err // rdmafs errors name the file and offset
}

func (s *remoteStream) Close() error { return nil }
