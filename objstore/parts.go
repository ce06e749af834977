package objstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Parts says how the object was uploaded: the size of its first part
// (that of every part but the last) and the number of parts, 1 for an
// object uploaded whole. A multipart object's ETag is the MD5 of its
// parts' MD5s followed by "-parts": with the part size, a reader of the
// whole object can check it (package vfs/cache does). It costs one HEAD
// with partNumber=1, pinned to the object's ETag.
func (o *Object) Parts(ctx context.Context) (partSize int64, parts int, err error) {
	var out *s3.HeadObjectOutput
	in := &s3.HeadObjectInput{Bucket: &o.info.Bucket, Key: &o.info.Key, PartNumber: aws.Int32(1)}
	if o.info.ETag != "" {
		in.IfMatch = &o.info.ETag
	}
	err = o.c.retry(ctx, "stat part 1 of "+o.url, func(ctx context.Context) error {
		actx, cancel := o.c.stallContext(ctx)
		defer cancel()
		var err error
		out, err = o.c.s3.Load().HeadObject(actx, in)
		return o.c.stalled(actx, err)
	})
	if err != nil {
		return 0, 0, o.c.opError(ctx, "stat part 1", o.info.Bucket, o.info.Key, -1, err)
	}
	n := int(aws.ToInt32(out.PartsCount))
	if n == 0 {
		return o.info.Size, 1, nil
	}
	return aws.ToInt64(out.ContentLength), n, nil
}
