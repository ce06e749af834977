package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ObjectInfo describes one object.
type ObjectInfo struct {
	Bucket, Key string
	Size        int64
	// ModTime is the last-modified time, in whole seconds: a listing
	// gives milliseconds where a HEAD gives seconds, and an object must
	// have one time whichever described it.
	ModTime time.Time
	// ETag is the entity tag as the store sent it, quotes included; it
	// changes whenever the object is replaced.
	ETag string
}

// URL is s3://bucket/key.
func (i ObjectInfo) URL() string { return URL(i.Bucket, i.Key) }

// Listing is what List found under a prefix.
type Listing struct {
	// Objects are the keys under the prefix, in the store's order (UTF-8
	// binary order on S3 and MinIO).
	Objects []ObjectInfo
	// Prefixes are the common prefixes ("directories") found when a
	// delimiter was given, each ending with the delimiter.
	Prefixes []string
}

// Stat returns the size, modification time and ETag of an object. A
// missing bucket or key matches fs.ErrNotExist; the error says which.
func (c *Client) Stat(ctx context.Context, bucket, key string) (ObjectInfo, error) {
	if err := checkBucket(bucket); err != nil || key == "" {
		return ObjectInfo{}, &Error{Op: "stat", URL: URL(bucket, key), Offset: -1, Msg: "want a bucket and a key", Err: ErrInvalid}
	}
	if err := c.checkCredentials(ctx, "stat", bucket, key); err != nil {
		return ObjectInfo{}, err
	}
	var out *s3.HeadObjectOutput
	err := c.retry(ctx, "stat "+URL(bucket, key), func(ctx context.Context) error {
		actx, cancel := c.stallContext(ctx)
		defer cancel()
		var err error
		out, err = c.s3.Load().HeadObject(actx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
		return c.stalled(actx, err)
	})
	if err != nil {
		if status, _ := httpStatus(err); status == http.StatusNotFound && c.bucketMissing(ctx, bucket) {
			return ObjectInfo{}, &Error{Op: "stat", URL: URL(bucket, key), Offset: -1, Msg: "no such bucket " + bucket, Err: ErrNoBucket}
		}
		return ObjectInfo{}, c.opError(ctx, "stat", bucket, key, -1, err)
	}
	return ObjectInfo{
		Bucket: bucket, Key: key,
		Size:    aws.ToInt64(out.ContentLength),
		ModTime: aws.ToTime(out.LastModified).Truncate(time.Second),
		ETag:    aws.ToString(out.ETag),
	}, nil
}

// bucketMissing tells a missing bucket from a missing key after a HEAD's
// bodiless 404: one HeadBucket, not retried.
func (c *Client) bucketMissing(ctx context.Context, bucket string) bool {
	actx, cancel := c.stallContext(ctx)
	defer cancel()
	_, err := c.s3.Load().HeadBucket(actx, &s3.HeadBucketInput{Bucket: &bucket})
	status, _ := httpStatus(err)
	var nb *types.NotFound
	return status == http.StatusNotFound || errors.As(err, &nb)
}

// List returns every object under prefix, following pagination. With a
// delimiter (usually "/"), keys that have it after the prefix are rolled
// up into Prefixes instead, as S3 defines. A missing bucket matches
// fs.ErrNotExist; an empty prefix is not an error (the listing is empty).
// Each page is retried on its own.
func (c *Client) List(ctx context.Context, bucket, prefix, delimiter string) (*Listing, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, &Error{Op: "list", URL: URL(bucket, prefix), Offset: -1, Msg: err.Error(), Err: ErrInvalid}
	}
	if err := c.checkCredentials(ctx, "list", bucket, prefix); err != nil {
		return nil, err
	}
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix}
	if delimiter != "" {
		in.Delimiter = &delimiter
	}
	l := &Listing{}
	for {
		var out *s3.ListObjectsV2Output
		err := c.retry(ctx, "list "+URL(bucket, prefix), func(ctx context.Context) error {
			actx, cancel := c.stallContext(ctx)
			defer cancel()
			var err error
			out, err = c.s3.Load().ListObjectsV2(actx, in)
			return c.stalled(actx, err)
		})
		if err != nil {
			return nil, c.opError(ctx, "list", bucket, prefix, -1, err)
		}
		for _, o := range out.Contents {
			l.Objects = append(l.Objects, ObjectInfo{
				Bucket: bucket, Key: aws.ToString(o.Key),
				Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified).Truncate(time.Second), ETag: aws.ToString(o.ETag),
			})
		}
		for _, p := range out.CommonPrefixes {
			l.Prefixes = append(l.Prefixes, aws.ToString(p.Prefix))
		}
		if !aws.ToBool(out.IsTruncated) {
			return l, nil
		}
		next := aws.ToString(out.NextContinuationToken)
		if next == "" || (in.ContinuationToken != nil && next == *in.ContinuationToken) {
			return nil, &Error{Op: "list", URL: URL(bucket, prefix), Offset: -1, Endpoint: c.endpoint,
				Msg: "the store said the listing goes on but gave no new continuation token", Err: ErrProtocol}
		}
		in.ContinuationToken = &next
	}
}

// checkCredentials fails early, without a request, when the credential
// chain finds nothing usable.
func (c *Client) checkCredentials(ctx context.Context, op, bucket, key string) error {
	if c.creds == nil {
		return nil
	}
	if _, err := c.creds.Retrieve(ctx); err != nil {
		c.forgetCredentials()
		return &Error{Op: op, URL: URL(bucket, key), Offset: -1, Endpoint: c.endpoint,
			Msg: "no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a web identity token or an instance role",
			Err: fmt.Errorf("%w: %w", ErrAuth, err)}
	}
	return nil
}

// stallContext bounds a request without a body to read by the stall
// timeout.
func (c *Client) stallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, c.opts.stallTimeout, errStalled)
}

// stalled reports errStalled when actx ran out on its own stall timeout
// (the parent context still running), else err.
func (c *Client) stalled(actx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(actx), errStalled) {
		return fmt.Errorf("%w of %v", errStalled, c.opts.stallTimeout)
	}
	return err
}
