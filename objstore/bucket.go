package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bucket views one bucket as a read-only file system, the way the AWS CLI
// and s3fs do: names are slash-separated keys, and a name is a directory
// when some key begins with it and a slash (S3 has no directories; a
// zero-byte key ending in '/', as consoles create, counts as one too).
// Names are relative to the bucket and have no leading slash; "" is the
// bucket itself. Errors match fs.ErrNotExist for a missing bucket, object
// or directory.
type Bucket struct {
	c    *Client
	name string
}

// Bucket returns the view of bucket name. It sends nothing.
func (c *Client) Bucket(name string) *Bucket { return &Bucket{c: c, name: name} }

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Stat describes name: an object (one HEAD), else a directory (one LIST of
// at most one key). FileInfo.Sys is the ObjectInfo of an object.
func (b *Bucket) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	name = strings.TrimSuffix(name, "/")
	if name != "" {
		info, err := b.c.Stat(ctx, b.name, name)
		if err == nil {
			return objectFileInfo(info), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoBucket) {
			return nil, err
		}
	}
	ok, err := b.isDir(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, &Error{Op: "stat", URL: URL(b.name, name), Offset: -1, Msg: "no such key or prefix in bucket " + b.name, Err: fs.ErrNotExist}
	}
	if name == "" {
		return fileInfo{name: b.name, dir: true}, nil
	}
	return dirFileInfo(name), nil
}

// isDir reports whether any key begins with name + "/" (for "", whether
// the bucket exists).
func (b *Bucket) isDir(ctx context.Context, name string) (bool, error) {
	prefix := dirPrefix(name)
	if prefix == "" {
		return true, b.c.headBucket(ctx, b.name)
	}
	var out *s3.ListObjectsV2Output
	err := b.c.retry(ctx, "list "+URL(b.name, prefix), func(ctx context.Context) error {
		actx, cancel := b.c.stallContext(ctx)
		defer cancel()
		var err error
		out, err = b.c.s3.ListObjectsV2(actx, &s3.ListObjectsV2Input{Bucket: &b.name, Prefix: &prefix, MaxKeys: aws.Int32(1)})
		return b.c.stalled(actx, err)
	})
	if err != nil {
		return false, b.c.opError(ctx, "stat", b.name, prefix, -1, err)
	}
	return len(out.Contents) > 0, nil
}

// List returns the objects and directories directly in directory name,
// sorted by name, following every page of the listing. A directory
// marker key (the directory's own name with a trailing slash) is not
// listed. Listing an object or a name nothing begins with fails with
// fs.ErrNotExist.
func (b *Bucket) List(ctx context.Context, name string) ([]fs.FileInfo, error) {
	name = strings.TrimSuffix(name, "/")
	prefix := dirPrefix(name)
	l, err := b.c.List(ctx, b.name, prefix, "/")
	if err != nil {
		return nil, err
	}
	var out []fs.FileInfo
	for _, o := range l.Objects {
		if rel := strings.TrimPrefix(o.Key, prefix); rel != "" {
			out = append(out, objectFileInfo(o))
		}
	}
	for _, p := range l.Prefixes {
		if rel := strings.TrimSuffix(strings.TrimPrefix(p, prefix), "/"); rel != "" {
			out = append(out, dirFileInfo(strings.TrimSuffix(p, "/")))
		}
	}
	if len(out) == 0 && len(l.Objects) == 0 && prefix != "" {
		return nil, &Error{Op: "list", URL: URL(b.name, prefix), Offset: -1, Msg: "no such prefix in bucket " + b.name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(out, func(x, y fs.FileInfo) int { return strings.Compare(x.Name(), y.Name()) })
	return out, nil
}

// WalkFiles calls fn for every object at or below directory name, with its
// key relative to name, in key order, from one listing without a
// delimiter (a request per 1,000 keys, whatever the depth). Directory
// markers are skipped. A name nothing begins with fails with
// fs.ErrNotExist.
func (b *Bucket) WalkFiles(ctx context.Context, name string, fn func(rel string, fi fs.FileInfo) error) error {
	name = strings.TrimSuffix(name, "/")
	prefix := dirPrefix(name)
	l, err := b.c.List(ctx, b.name, prefix, "")
	if err != nil {
		return err
	}
	if len(l.Objects) == 0 && prefix != "" {
		return &Error{Op: "list", URL: URL(b.name, prefix), Offset: -1, Msg: "no such prefix in bucket " + b.name, Err: fs.ErrNotExist}
	}
	for _, o := range l.Objects {
		rel := strings.TrimPrefix(o.Key, prefix)
		if rel == "" || strings.HasSuffix(rel, "/") {
			continue
		}
		if err := fn(rel, objectFileInfo(o)); err != nil {
			return err
		}
	}
	return nil
}

// Open opens object name (one HEAD), pinned to its ETag.
func (b *Bucket) Open(ctx context.Context, name string) (*Object, error) {
	return b.c.Open(ctx, b.name, name)
}

// OpenInfo opens the object name (its key) that a Stat, List or WalkFiles
// of this bucket just described as fi, pinned to the ETag fi carries,
// without a request: for objects just listed it saves one HEAD each.
// Reads of an object replaced since fail with ErrChanged. It has the shape
// of vfs.InfoOpener's and rdmafs.Client's OpenInfo.
func (b *Bucket) OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (*Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info, ok := fi.Sys().(ObjectInfo)
	if !ok || info.Bucket != b.name || info.Key != name {
		return nil, &Error{Op: "open", URL: URL(b.name, name), Offset: -1, Msg: fmt.Sprintf("not described by a listing of this object in bucket %s (a %T)", b.name, fi.Sys()), Err: ErrInvalid}
	}
	return b.c.openInfo(info), nil
}

// headBucket checks that a bucket exists and the credentials may use it.
func (c *Client) headBucket(ctx context.Context, bucket string) error {
	if err := c.checkCredentials(ctx, "stat", bucket, ""); err != nil {
		return err
	}
	err := c.retry(ctx, "stat "+URL(bucket, ""), func(ctx context.Context) error {
		actx, cancel := c.stallContext(ctx)
		defer cancel()
		_, err := c.s3.HeadBucket(actx, &s3.HeadBucketInput{Bucket: &bucket})
		return c.stalled(actx, err)
	})
	if status, _ := httpStatus(err); status == http.StatusNotFound {
		return &Error{Op: "stat", URL: URL(bucket, ""), Offset: -1, Msg: "no such bucket " + bucket, Err: ErrNoBucket}
	}
	if err != nil {
		return c.opError(ctx, "stat", bucket, "", -1, err)
	}
	return nil
}

func dirPrefix(name string) string {
	if name == "" {
		return ""
	}
	return name + "/"
}

// fileInfo describes an object or a directory of a Bucket.
type fileInfo struct {
	name string
	info ObjectInfo
	dir  bool
}

func objectFileInfo(o ObjectInfo) fs.FileInfo { return fileInfo{name: path.Base(o.Key), info: o} }
func dirFileInfo(key string) fs.FileInfo      { return fileInfo{name: path.Base(key), dir: true} }

func (fi fileInfo) Name() string { return fi.name }
func (fi fileInfo) Size() int64  { return fi.info.Size }
func (fi fileInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (fi fileInfo) ModTime() time.Time { return fi.info.ModTime }
func (fi fileInfo) IsDir() bool        { return fi.dir }

// Sys is the ObjectInfo of an object, nil for a directory.
func (fi fileInfo) Sys() any {
	if fi.dir {
		return nil
	}
	return fi.info
}
