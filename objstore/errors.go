package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Sentinel errors. Errors of this package wrap one of them (or
// fs.ErrNotExist, fs.ErrPermission, a context error), so callers branch
// with errors.Is.
var (
	// ErrChanged: the object was replaced or deleted after Open (its ETag
	// no longer matches), so reading on would mix versions. Open it again.
	ErrChanged = errors.New("object changed since it was opened")
	// ErrAuth: the store refused the credentials or the signature. Never
	// retried. Also matches fs.ErrPermission.
	ErrAuth = errors.New("access denied")
	// ErrChecksum: the bytes of a whole-object read do not match the
	// x-amz-checksum-* the store keeps for the object.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrUnavailable: the store could not be reached or kept failing
	// (5xx, 429, resets, stalls) until the retry deadline.
	ErrUnavailable = errors.New("object store unavailable")
	// ErrRetryDeadline: a request kept failing (5xx, 429, resets,
	// stalls) until its retry deadline (WithRetryDeadline,
	// GDSLOAD_S3_DEADLINE) passed. Errors matching it also match
	// ErrUnavailable.
	ErrRetryDeadline = errors.New("retry deadline passed")
	// ErrProtocol: the store answered something that cannot be right (more
	// or fewer bytes than asked, a range it was not asked for).
	ErrProtocol = errors.New("unexpected object store response")
	// ErrInvalid: a malformed URL, bucket or key, or a negative offset.
	ErrInvalid = errors.New("invalid argument")
	// ErrNoBucket: the bucket does not exist. Also matches fs.ErrNotExist,
	// as a missing key does.
	ErrNoBucket error = noBucket{}
)

type noBucket struct{}

func (noBucket) Error() string        { return "bucket not found" }
func (noBucket) Is(target error) bool { return target == fs.ErrNotExist }

// Error is a failed operation on one object, bucket or prefix.
type Error struct {
	Op       string // "stat", "list", "read", "open"
	URL      string // s3://bucket/key or s3://bucket/prefix
	Offset   int64  // for reads; -1 otherwise
	Endpoint string // where requests went, for errors that depend on it
	Msg      string // what happened and what to do next
	Err      error  // a sentinel, fs.ErrNotExist, fs.ErrPermission or the cause

	gaveUp bool // retried until the deadline: matches ErrRetryDeadline
}

func (e *Error) Error() string {
	s := "objstore " + e.Op + " " + e.URL
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Endpoint != "" {
		s += " (endpoint " + e.Endpoint + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes ErrAuth match fs.ErrPermission, as os errors do.
func (e *Error) Is(target error) bool {
	return (target == fs.ErrPermission && errors.Is(e.Err, ErrAuth)) || (target == ErrRetryDeadline && e.gaveUp)
}

// authCodes are S3 error codes that mean the credentials or signature were
// refused (whatever the status).
var authCodes = map[string]bool{
	"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"ExpiredToken": true, "InvalidToken": true, "TokenRefreshRequired": true,
	"RequestTimeTooSkewed": true, "AllAccessDisabled": true, "AccountProblem": true,
	"InvalidSecurity": true, "MissingSecurityHeader": true,
}

// opError turns the last failure of a request on URL(bucket, key) into an
// *Error that says what failed and what to do next. off < 0 for requests
// that are not reads.
func (c *Client) opError(ctx context.Context, op, bucket, key string, off int64, err error) error {
	e := &Error{Op: op, URL: URL(bucket, key), Offset: off}
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	status, _ := httpStatus(err)
	var g *gaveUp
	var ce *checksumError
	var un *unreachable
	switch {
	case ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		e.Err = err
	case errors.As(err, &un):
		e.Endpoint = c.endpoint
		e.Msg = "cannot reach the store: its first request could not connect, so it was not retried; check the endpoint (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the client's option) and that the store is up"
		e.Err = fmt.Errorf("%w: %w", ErrUnavailable, brief(un.err))
	case errors.As(err, &g):
		e.Endpoint = c.endpoint
		e.Msg = fmt.Sprintf("gave up after %d attempts over %v; check that the store is up and reachable, or raise the retry deadline (%s, now %v)",
			g.attempts, g.elapsed.Round(time.Millisecond), DeadlineEnv, c.opts.retryDeadline)
		e.gaveUp = true
		e.Err = fmt.Errorf("%w: %w", ErrUnavailable, brief(g.err))
	case errors.As(err, &ce):
		e.Msg = ce.Error()
		e.Err = ErrChecksum
	case errors.Is(err, ErrChanged) || status == http.StatusPreconditionFailed:
		e.Msg = "the object was replaced or deleted after it was opened (its ETag no longer matches); open it again to read the new version"
		e.Err = ErrChanged
	case op == "read" && (status == http.StatusNotFound || code == "NoSuchKey" || code == "NoSuchBucket"):
		e.Msg = "the object was deleted after it was opened"
		e.Err = fmt.Errorf("%w: %w", ErrChanged, fs.ErrNotExist)
	case code == "NoSuchBucket":
		e.Msg = "no such bucket " + bucket
		e.Err = ErrNoBucket
	case code == "NoSuchKey" || status == http.StatusNotFound:
		e.Msg = "no such key in bucket " + bucket
		e.Err = fs.ErrNotExist
	case authCodes[code] || status == http.StatusForbidden || status == http.StatusUnauthorized:
		e.Endpoint = c.endpoint
		e.Msg = "the store refused the request signed with credentials from " + c.credentialSource(ctx) +
			"; check the keys, AWS_PROFILE, the endpoint and the bucket's policy"
		e.Err = fmt.Errorf("%w: %w", ErrAuth, brief(err))
		c.forgetCredentials() // after naming the ones refused
	case status == http.StatusMovedPermanently || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed":
		e.Endpoint = c.endpoint
		e.Msg = "the bucket is not in region " + c.region + regionHint(err) + "; set AWS_REGION to the bucket's region"
		e.Err = fmt.Errorf("%w: %w", ErrInvalid, brief(err))
	default:
		e.Endpoint = c.endpoint
		e.Err = brief(err)
	}
	return e
}

// regionHint names the bucket's region when the store said which.
func regionHint(err error) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
			return " but in " + r
		}
	}
	return ""
}

// briefError says what the store answered in a few words ("HTTP 403
// InvalidAccessKeyId: The Access Key Id you provided does not exist in our
// records.") instead of the SDK's operation, request and host ids; it
// unwraps to the SDK's error.
type briefError struct {
	msg string
	err error
}

func (e *briefError) Error() string { return e.msg }
func (e *briefError) Unwrap() error { return e.err }

// brief shortens an SDK error to what the store said, or to the network
// failure under a request that got no answer.
func brief(err error) error {
	var ae smithy.APIError
	if status, ok := httpStatus(err); ok && errors.As(err, &ae) {
		msg := fmt.Sprintf("HTTP %d %s", status, ae.ErrorCode())
		if m := ae.ErrorMessage(); m != "" && m != ae.ErrorCode() {
			msg += ": " + m
		}
		return &briefError{msg: msg, err: err}
	}
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) && se.Err != nil {
		return &briefError{msg: se.Err.Error(), err: err}
	}
	return err
}
