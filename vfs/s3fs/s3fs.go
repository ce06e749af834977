// Package s3fs serves s3://bucket/key URLs of S3-compatible object stores
// through a vfs.Mux, with package objstore: a bucket is an FS, its
// prefixes are directories. Importing the package registers the scheme
// with vfs.Register, so every Mux that vfs.New makes serves it; With sets
// the client options of one Mux.
package s3fs

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/objstore"
	"github.com/gdsload/gdsload/vfs"
)

// Name is the URL scheme served: s3://bucket/key.
const Name = objstore.Scheme

func init() {
	vfs.Register(Name, vfs.Backend{Scheme: func() vfs.Scheme { return &s3Scheme{} }})
}

// With sets the client options of s3:// URLs (endpoint, region,
// credentials, range size, concurrency, retries: objstore.WithEndpoint and
// the rest), checked when the option is applied. Without it, the client
// finds its credentials, region and endpoint the way the AWS CLI does (the
// environment, AWS_PROFILE and the shared files, web identity, instance
// metadata, AWS_ENDPOINT_URL_S3), when the first s3:// URL is opened.
func With(opts ...objstore.Option) vfs.Option {
	if err := objstore.CheckOptions(opts...); err != nil {
		return func(*vfs.Mux) error { return err }
	}
	return vfs.WithScheme(Name, &s3Scheme{opts: slices.Clone(opts)})
}

// s3Scheme serves every bucket through one client, made on first use, so
// connections are shared by all the buckets of a Mux.
type s3Scheme struct {
	opts []objstore.Option

	mu sync.Mutex
	c  *objstore.Client
}

func (s *s3Scheme) FS(ctx context.Context, bucket string) (vfs.FS, error) {
	if err := objstore.CheckBucket(bucket); err != nil {
		return nil, fmt.Errorf("s3://%s: %w", bucket, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		c, err := objstore.New(ctx, s.opts...)
		if err != nil {
			return nil, err
		}
		s.c = c
	}
	return s3FS{b: s.c.Bucket(bucket), c: s.c}, nil
}

// s3FS is one bucket: prefixes are directories, objects are files.
type s3FS struct {
	b *objstore.Bucket
	c *objstore.Client
}

var (
	_ vfs.File               = (*objstore.Object)(nil)
	_ loader.ContextReaderAt = (*objstore.Object)(nil)
	_ loader.ChunkSizer      = (*objstore.Object)(nil)
	_ vfs.InfoOpener         = s3FS{}
	_ vfs.Walker             = s3FS{}
)

func (s s3FS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return s.b.Stat(ctx, name)
}

func (s s3FS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	return s.b.List(ctx, name)
}

func (s s3FS) Open(ctx context.Context, name string) (vfs.File, error) {
	o, err := s.b.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// OpenInfo opens an object a listing described, pinned to the ETag the
// listing gave, without a HEAD.
func (s s3FS) OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (vfs.File, error) {
	if _, ok := fi.Sys().(objstore.ObjectInfo); !ok {
		return s.Open(ctx, name)
	}
	o, err := s.b.OpenInfo(ctx, name, fi)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// WalkFiles lists every object below a prefix in one listing, however deep.
func (s s3FS) WalkFiles(ctx context.Context, name string, fn func(rel string, fi fs.FileInfo) error) error {
	return s.b.WalkFiles(ctx, name, fn)
}

// Close drops the client's idle connections (the client is shared by the
// Mux's buckets; closing it twice does no harm).
func (s s3FS) Close() error { return s.c.Close() }
