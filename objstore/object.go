package objstore

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"
)

// Object is an object opened for reading, pinned to the version (ETag)
// seen at Open: every read is a GET with If-Match, so a replaced or
// deleted object fails reads with ErrChanged instead of mixing versions.
// It implements io.ReaderAt; parallel ReadAt calls are allowed.
type Object struct {
	c    *Client
	info ObjectInfo
	url  string

	closed atomic.Bool
	mu     sync.Mutex
	sum    string // algorithm of the last verified whole-object read
}

// Open stats an object (one HEAD) and returns it pinned to its ETag. A
// missing bucket or key matches fs.ErrNotExist.
func (c *Client) Open(ctx context.Context, bucket, key string) (*Object, error) {
	info, err := c.Stat(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	return c.openInfo(info), nil
}

// openInfo returns the object info describes, pinned to info.ETag, without
// a request (Open after its HEAD, Bucket.OpenInfo after a listing). Reads
// of an object replaced since fail with ErrChanged.
func (c *Client) openInfo(info ObjectInfo) *Object {
	return &Object{c: c, info: info, url: URL(info.Bucket, info.Key)}
}

// Name is the object's URL, s3://bucket/key.
func (o *Object) Name() string { return o.url }

// PreferredChunkSize is the client's range size (DefaultRangeSize unless
// WithRangeSize): a load that leaves the chunk size to its sources
// (loader.ChunkSizer) then makes one ranged GET per chunk of that size.
// Each ranged GET costs the server a request's setup: with smaller ranges
// MinIO spent more CPU on the requests of a load that shared its cores
// with the client (docs/PERFORMANCE-NOTES.md, objstore; docs/S3.md).
func (o *Object) PreferredChunkSize() int64 { return o.c.opts.rangeSize }

// Size is the object's size at Open.
func (o *Object) Size() int64 { return o.info.Size }

// ModTime is the object's last-modified time at Open.
func (o *Object) ModTime() time.Time { return o.info.ModTime }

// ETag is the entity tag every read is pinned to.
func (o *Object) ETag() string { return o.info.ETag }

// Identity names the version every read is pinned to: the ETag, or the
// size and modification time of a store that sends no ETag. Two objects
// with the same URL and identity hold the same bytes.
func (o *Object) Identity() string {
	if o.info.ETag != "" {
		return "etag " + o.info.ETag
	}
	return fmt.Sprintf("size %d mtime %d", o.info.Size, o.info.ModTime.UnixNano())
}

// Info is what Open found.
func (o *Object) Info() ObjectInfo { return o.info }

// Verified names the x-amz-checksum-* algorithm the last whole-object read
// was verified with, "" when none was (ranges of a larger object, or a
// store that keeps no full-object checksum for it).
func (o *Object) Verified() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sum
}

// Close marks the object closed; later reads fail with fs.ErrClosed. The
// connections belong to the Client and stay open for reuse.
func (o *Object) Close() error {
	o.closed.Store(true)
	return nil
}

// ReadAt reads len(p) bytes at off, following io.ReaderAt: when n <
// len(p) the error says why (io.EOF past the end of the object). Bytes go
// straight into p: reads larger than the range size are split into ranged
// GETs run in parallel (up to the client's concurrency), each retried on
// its own and resumed where a broken body stopped. A read of the whole
// object that fits one range is a plain GET, verified against the store's
// x-amz-checksum-* when it keeps one. ReadAt does not retain p.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	return o.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt with a context that cancels the read.
func (o *Object) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	switch {
	case o.closed.Load():
		return 0, &Error{Op: "read", URL: o.url, Offset: off, Err: fs.ErrClosed}
	case off < 0:
		return 0, &Error{Op: "read", URL: o.url, Offset: off, Msg: "negative offset", Err: ErrInvalid}
	case len(p) == 0:
		return 0, nil
	case off >= o.info.Size:
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), o.info.Size-off))
	n, err := o.read(ctx, p[:want], off)
	if err == nil && want < len(p) {
		err = io.EOF
	}
	return n, err
}

// read fills p from off with ranged GETs, in parallel when p spans more
// than one range. It returns the bytes read contiguously from p[0].
func (o *Object) read(ctx context.Context, p []byte, off int64) (int, error) {
	rs := int(o.c.opts.rangeSize)
	ranges := (len(p) + rs - 1) / rs
	if ranges == 1 {
		whole := off == 0 && int64(len(p)) == o.info.Size
		return o.readRange(ctx, p, off, whole)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make([]int, ranges)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		once    sync.Once
		failure error // the first range to fail; the others were cancelled by it
	)
	for range min(ranges, o.c.opts.concurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= ranges || ctx.Err() != nil {
					return
				}
				lo, hi := i*rs, min((i+1)*rs, len(p))
				var err error
				done[i], err = o.readRange(ctx, p[lo:hi], off+int64(lo), false)
				if err != nil {
					once.Do(func() { failure = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for i := range ranges {
		n += done[i]
		if done[i] < min(rs, len(p)-i*rs) {
			break
		}
	}
	switch {
	case n == len(p):
		return n, nil
	case failure != nil:
		return n, failure
	}
	return n, context.Cause(parent)
}
