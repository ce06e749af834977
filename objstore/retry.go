package objstore

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Backoff between retries: "full jitter" (a uniform wait in [0, cap)),
// with the cap doubling from backoffBase up to backoffMax, so many ranges
// failing at once do not retry in lockstep.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = time.Second
	// A checksum mismatch is retried this many times (the bytes may have
	// been damaged in transit), not until the deadline: a stored object
	// whose bytes do not match its checksum will not heal.
	maxChecksumRetries = 2
)

// errStalled: a request got no response, or a body no bytes, for the
// stall timeout.
var errStalled = errors.New("no bytes received for the stall timeout")

// transientError marks a failure while a response body was being read: the
// connection broke, reset or stalled. Always retried.
type transientError struct{ err error }

func (e *transientError) Error() string { return "reading the response body: " + e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// gaveUp is the last failure of a request retried until its deadline.
type gaveUp struct {
	attempts int
	elapsed  time.Duration
	err      error
}

func (e *gaveUp) Error() string { return e.err.Error() }
func (e *gaveUp) Unwrap() error { return e.err }

type failureKind int

const (
	fatal     failureKind = iota // retrying cannot help (auth, missing, changed, bad request)
	transient                    // 5xx, 429, resets, refused connections, stalls
	checksum                     // a whole-object read did not match its checksum
)

// retryableCodes are S3 error codes worth retrying whatever their status
// (RequestTimeout comes with a 400).
var retryableCodes = map[string]bool{
	"RequestTimeout": true, "SlowDown": true, "Throttling": true, "ThrottlingException": true,
	"RequestLimitExceeded": true, "InternalError": true, "ServiceUnavailable": true,
}

func classify(err error) failureKind {
	if errors.Is(err, ErrChecksum) {
		return checksum
	}
	var te *transientError
	if errors.As(err, &te) || errors.Is(err, errStalled) {
		return transient
	}
	if status, ok := httpStatus(err); ok {
		var ae smithy.APIError
		if errors.As(err, &ae) && retryableCodes[ae.ErrorCode()] {
			return transient
		}
		switch {
		case status == 408 || status == 429:
			return transient
		case status >= 500 && status != 501 && status != 505:
			return transient
		}
		return fatal
	}
	var se *smithyhttp.RequestSendError
	var ne net.Error
	switch {
	case errors.As(err, &se),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne) && ne.Timeout():
		return transient
	}
	return fatal
}

// httpStatus is the HTTP status of a failed request, if it got a response
// (the SDK reports a request that was never answered with status 0).
func httpStatus(err error) (int, bool) {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		return re.HTTPStatusCode(), true
	}
	return 0, false
}

// unreachable is a failure to connect (the endpoint's name does not
// resolve, or nothing listens there) before the client ever got a
// response: a wrong endpoint, not an outage, so it is not retried.
type unreachable struct{ err error }

func (e *unreachable) Error() string { return e.err.Error() }
func (e *unreachable) Unwrap() error { return e.err }

// cannotConnect reports whether err is a failure to reach the endpoint at
// all: a name that does not resolve, a refused connection, no route.
func cannotConnect(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// retry runs attempt until it succeeds, fails in a way retrying cannot
// fix, or the retry deadline (counted from the first failure) passes; then
// it returns a *gaveUp. The last attempt may start just before the
// deadline and run for up to the stall timeout. attempt gets a fresh try
// each time and must itself resume or restart its work. Until the client
// has had a response from the store, a failure to connect (cannotConnect)
// is an *unreachable at once: retries are for a store seen up before.
func (c *Client) retry(ctx context.Context, what string, attempt func(ctx context.Context) error) error {
	var first time.Time
	checksums := 0
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			c.reached.Store(true)
			return nil
		}
		if _, answered := httpStatus(err); answered {
			c.reached.Store(true)
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if !c.reached.Load() && cannotConnect(err) {
			return &unreachable{err: err}
		}
		switch classify(err) {
		case fatal:
			return err
		case checksum:
			if checksums++; checksums > maxChecksumRetries {
				return err
			}
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		left := c.opts.retryDeadline - now.Sub(first)
		if left <= 0 {
			return &gaveUp{attempts: n, elapsed: now.Sub(first), err: err}
		}
		wait := min(jitter(n), left)
		c.log.Debug("objstore retrying", "what", what, "attempt", n, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// jitter is the wait before retry n (n ≥ 1).
func jitter(n int) time.Duration {
	ceiling := backoffMax
	if n < 16 {
		ceiling = min(backoffMax, backoffBase<<(n-1))
	}
	return rand.N(ceiling) + time.Millisecond
}
