package vfs

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/objstore"
)

// WithS3 sets the client options of s3:// URLs (endpoint, region,
// credentials, range size, concurrency, retries: objstore.WithEndpoint and
// the rest), checked now. Without it, the client finds its credentials,
// region and endpoint the way the AWS CLI does (the environment,
// AWS_PROFILE and the shared files, web identity, instance metadata,
// AWS_ENDPOINT_URL_S3), when the first s3:// URL is opened.
func WithS3(opts ...objstore.Option) Option {
	return func(m *Mux) error {
		if err := objstore.CheckOptions(opts...); err != nil {
			return err
		}
		m.schemes[objstore.Scheme] = &s3Scheme{opts: slices.Clone(opts)}
		return nil
	}
}

// s3Scheme serves every bucket through one client, made on first use, so
// connections are shared by all the buckets of a Mux.
type s3Scheme struct {
	opts []objstore.Option

	mu sync.Mutex
	c  *objstore.Client
}

func (s *s3Scheme) FS(ctx context.Context, bucket string) (FS, error) {
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
	_ File                   = (*objstore.Object)(nil)
	_ loader.ContextReaderAt = (*objstore.Object)(nil)
	_ loader.ChunkSizer      = (*objstore.Object)(nil)
	_ InfoOpener             = s3FS{}
	_ Walker                 = s3FS{}
)

func (s s3FS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return s.b.Stat(ctx, name)
}

func (s s3FS) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	return s.b.List(ctx, name)
}

func (s s3FS) Open(ctx context.Context, name string) (File, error) {
	o, err := s.b.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// OpenInfo opens an object a listing described, pinned to the ETag the
// listing gave, without a HEAD.
func (s s3FS) OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (File, error) {
	if _, ok := fi.Sys().(objstore.ObjectInfo); !ok {
		return s.Open(ctx, name)
	}
	o, err := s.b.OpenInfo(fi)
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
