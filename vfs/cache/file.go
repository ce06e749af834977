package cache

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

// File is a remote file served from its local copy: a *loader.File (so a
// load reads it with O_DIRECT or GPUDirect Storage like any local file)
// that keeps the remote file's URL, identity and modification time, and
// holds the entry's shared lock until Close.
type File struct {
	*loader.File
	url, identity string
	mtime         time.Time
	lock          *flock
}

var (
	_ vfs.File                    = (*File)(nil)
	_ loader.FileDescriptorSource = (*File)(nil)
)

// Name is the remote file's URL.
func (f *File) Name() string { return f.url }

// ModTime is the remote file's modification time when it was cached.
func (f *File) ModTime() time.Time { return f.mtime }

// Identity is the remote file's identity (its ETag, or size and
// modification time): the copy holds the bytes of that version.
func (f *File) Identity() string { return f.identity }

// Close closes the copy and releases the entry for eviction.
func (f *File) Close() error {
	err := f.File.Close()
	f.lock.unlock()
	return err
}

// Schemes are the URL schemes WithCache serves through the cache.
var Schemes = []string{"s3", "rdmafs"}

// WithCache returns the vfs option that serves the files of the s3:// and
// rdmafs:// URLs a Mux opens through c. Stat, List and Walk still ask the
// store (a HEAD or a listing, not the data), which is how a replaced
// object is noticed. The Mux's Close records c's statistics in the folder
// (Cache.Close); c stays usable.
func WithCache(c *Cache) vfs.Option {
	return vfs.WithSchemeWrapper(func(name string, s vfs.Scheme) vfs.Scheme {
		for _, n := range Schemes {
			if n == name {
				return scheme{c: c, inner: s}
			}
		}
		return s
	})
}

type scheme struct {
	c     *Cache
	inner vfs.Scheme
}

func (s scheme) FS(ctx context.Context, authority string) (vfs.FS, error) {
	inner, err := s.inner.FS(ctx, authority)
	if err != nil {
		return nil, err
	}
	base := cachedFS{c: s.c, inner: inner}
	if w, ok := inner.(vfs.Walker); ok {
		return walkerFS{cachedFS: base, w: w}, nil
	}
	return base, nil
}

// cachedFS is a remote FS whose files are served through the cache.
type cachedFS struct {
	c     *Cache
	inner vfs.FS
}

var (
	_ vfs.InfoOpener = cachedFS{}
	_ vfs.Walker     = walkerFS{}
	_ io.Closer      = cachedFS{}
)

func (f cachedFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.inner.Stat(ctx, name)
}

func (f cachedFS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	return f.inner.List(ctx, name)
}

func (f cachedFS) Open(ctx context.Context, name string) (vfs.File, error) {
	r, err := f.inner.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return f.c.Serve(ctx, r)
}

func (f cachedFS) OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (vfs.File, error) {
	op, ok := f.inner.(vfs.InfoOpener)
	if !ok {
		return f.Open(ctx, name)
	}
	r, err := op.OpenInfo(ctx, name, fi)
	if err != nil {
		return nil, err
	}
	return f.c.Serve(ctx, r)
}

// Close closes the remote FS and records the cache's statistics in its
// folder (Cache.Close), so that a Mux's Close does.
func (f cachedFS) Close() error {
	err := f.c.Close()
	if c, ok := f.inner.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// walkerFS is a cachedFS over an FS that walks a tree in one pass.
type walkerFS struct {
	cachedFS
	w vfs.Walker
}

func (f walkerFS) WalkFiles(ctx context.Context, name string, fn func(rel string, fi fs.FileInfo) error) error {
	return f.w.WalkFiles(ctx, name, fn)
}
