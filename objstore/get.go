package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
)

// readRange fills p with the object's bytes at off: one GET at a time
// within the client's concurrency, retried until the deadline, each retry
// resuming after the bytes already read (a whole-object read restarts, so
// its checksum covers one clean pass). It returns the bytes read
// contiguously from p[0].
func (o *Object) readRange(ctx context.Context, p []byte, off int64, whole bool) (int, error) {
	c := o.c
	if err := c.checkCredentials(ctx, "read", o.info.Bucket, o.info.Key); err != nil {
		return 0, err
	}
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		return 0, &Error{Op: "read", URL: o.url, Offset: off, Err: context.Cause(ctx)}
	}
	n := 0
	what := fmt.Sprintf("read %s bytes %d-%d", o.url, off, off+int64(len(p))-1)
	err := c.retry(ctx, what, func(ctx context.Context) error {
		if whole {
			n = 0
		}
		m, err := o.get(ctx, p[n:], off+int64(n), whole)
		n += m
		return err
	})
	if err != nil {
		return n, c.opError(ctx, "read", o.info.Bucket, o.info.Key, off+int64(n), err)
	}
	return n, nil
}

// get is one GET of len(p) bytes at off into p, pinned to the ETag. It
// returns how many bytes landed, contiguously from p[0], so a retry can
// resume. A watchdog cancels the request when the response, or the next
// bytes of its body, take longer than the stall timeout.
func (o *Object) get(ctx context.Context, p []byte, off int64, whole bool) (int, error) {
	c := o.c
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(c.opts.stallTimeout, func() { cancel(errStalled) })
	defer watchdog.Stop()

	in := &s3.GetObjectInput{Bucket: &o.info.Bucket, Key: &o.info.Key}
	if o.info.ETag != "" {
		in.IfMatch = &o.info.ETag
	} else {
		// A store that sends no ETag: the modification time is the
		// next best pin.
		in.IfUnmodifiedSince = &o.info.ModTime
	}
	if whole {
		in.ChecksumMode = types.ChecksumModeEnabled
	} else {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1))
	}
	out, err := c.s3.Load().GetObject(actx, in, withoutSDKChecksum)
	if err != nil {
		return 0, c.stalled(actx, err)
	}
	defer out.Body.Close()
	if err := o.checkResponse(out, off, len(p), whole); err != nil {
		return 0, err
	}
	v := (*verifier)(nil)
	if whole {
		v = newVerifier(out)
	}
	n := 0
	for n < len(p) {
		m, err := out.Body.Read(p[n:])
		v.write(p[n : n+m])
		n += m
		watchdog.Reset(c.opts.stallTimeout)
		if err == io.EOF && n < len(p) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && n < len(p) {
			return n, &transientError{c.stalled(actx, err)}
		}
	}
	// Read on to the end of the body: the connection goes back to the
	// pool only once its body is drained, and a longer body is a lie.
	var extra [1]byte
	if m, err := io.ReadFull(out.Body, extra[:]); m > 0 {
		return n, fmt.Errorf("%w: the body of %s at %d is longer than the %d bytes asked", ErrProtocol, o.url, off, len(p))
	} else if err != io.EOF {
		return n, &transientError{c.stalled(actx, err)}
	}
	if err := v.check(); err != nil {
		return 0, err
	}
	if whole {
		o.mu.Lock()
		o.sum = v.name()
		o.mu.Unlock()
	}
	return n, nil
}

// checkResponse refuses a response that is not the pinned version or not
// the range asked: a store that ignores If-Match or Range must not slip
// other bytes into the buffer.
func (o *Object) checkResponse(out *s3.GetObjectOutput, off int64, n int, whole bool) error {
	if o.info.ETag != "" && out.ETag != nil && *out.ETag != o.info.ETag {
		return fmt.Errorf("%w: the store sent ETag %s, pinned %s", ErrChanged, *out.ETag, o.info.ETag)
	}
	if got := aws.ToInt64(out.ContentLength); out.ContentLength != nil && got != int64(n) {
		return fmt.Errorf("%w: %d bytes in the response, %d asked", ErrProtocol, got, n)
	}
	if whole {
		return nil
	}
	cr := aws.ToString(out.ContentRange)
	first, last, total, ok := parseContentRange(cr)
	switch {
	case !ok:
		return fmt.Errorf("%w: Content-Range %q for bytes %d-%d", ErrProtocol, cr, off, off+int64(n)-1)
	case total != o.info.Size:
		return fmt.Errorf("%w: the object is now %d bytes, %d at open", ErrChanged, total, o.info.Size)
	case first != off || last != off+int64(n)-1:
		return fmt.Errorf("%w: Content-Range %q for bytes %d-%d", ErrProtocol, cr, off, off+int64(n)-1)
	}
	return nil
}

// parseContentRange parses "bytes FIRST-LAST/TOTAL".
func parseContentRange(s string) (first, last, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	span, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	first, err1 = strconv.ParseInt(a, 10, 64)
	last, err2 = strconv.ParseInt(b, 10, 64)
	total, err3 = strconv.ParseInt(tot, 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || first < 0 || last < first || total <= last {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

// withoutSDKChecksum removes the SDK's own response checksum validation:
// get verifies whole-object reads itself (and knows which algorithm it
// used), and must not have a ranged read checked against a whole-object
// checksum.
func withoutSDKChecksum(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		_, _ = st.Deserialize.Remove("AWSChecksum:ValidateOutputPayloadChecksum")
		return nil
	})
}
