package objstore

import (
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"strconv"
	"time"
)

// Defaults and caps of the options. The range size and concurrency were
// chosen by measurement on loopback MinIO (docs/S3.md, "Tuning").
const (
	DefaultRangeSize   = 8 << 20 // bytes per ranged GET
	MinRangeSize       = 64 << 10
	MaxRangeSize       = 1 << 30
	DefaultConcurrency = 16 // ranged GETs in flight per client
	MaxConcurrency     = 512

	DefaultRetryDeadline = 30 * time.Second // retries of one request, from its first failure
	DefaultStallTimeout  = 20 * time.Second // a GET that receives nothing for this long is retried
	DefaultRegion        = "us-east-1"      // when neither an option nor the AWS configuration names one
)

// DeadlineEnv is the environment variable that sets the retry deadline of
// clients not given WithRetryDeadline: a duration ("90s", "2m") or a
// number of seconds.
const DeadlineEnv = "GDSLOAD_S3_DEADLINE"

// ParseDeadline reads a retry deadline as DeadlineEnv and the command
// line write it: a Go duration ("90s", "2m") or a number of seconds
// ("90"), not negative; 0 disables retries.
func ParseDeadline(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("retry deadline %q: want a duration such as 90s or 2m, or a number of seconds", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("retry deadline %q is negative", s)
	}
	return d, nil
}

// deadlineFromEnv is DeadlineEnv's deadline, ok false when it is unset.
func deadlineFromEnv() (time.Duration, bool, error) {
	v, set := os.LookupEnv(DeadlineEnv)
	if !set || v == "" {
		return 0, false, nil
	}
	d, err := ParseDeadline(v)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", DeadlineEnv, err)
	}
	return d, true, nil
}

type options struct {
	region        string
	endpoint      string
	pathStyle     *bool // nil: path-style exactly when an endpoint is overridden
	profile       string
	static        *staticCreds
	anonymous     bool
	rangeSize     int64
	concurrency   int
	retryDeadline time.Duration
	deadlineSet   bool // by WithRetryDeadline, over DeadlineEnv
	stallTimeout  time.Duration
	log           *slog.Logger
}

type staticCreds struct{ key, secret, token string }

func defaultOptions() options {
	return options{
		rangeSize:     DefaultRangeSize,
		concurrency:   DefaultConcurrency,
		retryDeadline: DefaultRetryDeadline,
		stallTimeout:  DefaultStallTimeout,
	}
}

// Option configures a Client.
type Option func(*options) error

// WithRegion sets the region, overriding AWS_REGION and the shared config
// file. Without any, requests are signed for DefaultRegion.
func WithRegion(region string) Option {
	return func(o *options) error { o.region = region; return nil }
}

// WithEndpoint sets the store's base URL ("http://127.0.0.1:9000",
// "https://<account>.r2.cloudflarestorage.com"), overriding
// AWS_ENDPOINT_URL_S3 and AWS_ENDPOINT_URL.
func WithEndpoint(endpoint string) Option {
	return func(o *options) error {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint %q is not an http:// or https:// URL", endpoint)
		}
		o.endpoint = endpoint
		return nil
	}
}

// WithPathStyle chooses path-style addressing (http://host/bucket/key, what
// MinIO and Ceph RGW expect) or virtual-hosted style
// (http://bucket.host/key, what AWS prefers). The default is path-style
// exactly when the endpoint is overridden.
func WithPathStyle(on bool) Option {
	return func(o *options) error { o.pathStyle = &on; return nil }
}

// WithProfile selects a profile of the shared config and credentials
// files, overriding AWS_PROFILE.
func WithProfile(name string) Option {
	return func(o *options) error { o.profile = name; return nil }
}

// WithStaticCredentials uses these keys instead of the credential chain.
func WithStaticCredentials(accessKey, secretKey, sessionToken string) Option {
	return func(o *options) error {
		if accessKey == "" || secretKey == "" {
			return fmt.Errorf("static credentials need both an access key and a secret key")
		}
		o.static = &staticCreds{accessKey, secretKey, sessionToken}
		return nil
	}
}

// WithAnonymous sends unsigned requests, for public buckets.
func WithAnonymous() Option {
	return func(o *options) error { o.anonymous = true; return nil }
}

// WithRangeSize sets the largest ranged GET: a read larger than this is
// split into ranges read in parallel (default DefaultRangeSize, between
// MinRangeSize and MaxRangeSize). Each range is one request: see
// docs/S3.md for what that costs.
func WithRangeSize(n int64) Option {
	return func(o *options) error {
		if n < MinRangeSize || n > MaxRangeSize {
			return fmt.Errorf("range size %d is outside [%d, %d]", n, MinRangeSize, MaxRangeSize)
		}
		o.rangeSize = n
		return nil
	}
}

// WithConcurrency caps the ranged GETs a client has in flight at once,
// over all its objects (default DefaultConcurrency, at most
// MaxConcurrency). Idle connections are kept for reuse up to this number.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 || n > MaxConcurrency {
			return fmt.Errorf("concurrency %d is outside [1, %d]", n, MaxConcurrency)
		}
		o.concurrency = n
		return nil
	}
}

// WithRetryDeadline bounds how long one request (a range, a stat, a page
// of a listing) is retried after its first failure (default: DeadlineEnv
// when set, else DefaultRetryDeadline; 0 disables retries). A request
// that cannot connect before the client has had any response from the
// store is not retried: the endpoint is wrong or the store is down.
func WithRetryDeadline(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("negative retry deadline %v", d)
		}
		o.retryDeadline, o.deadlineSet = d, true
		return nil
	}
}

// WithStallTimeout sets how long a request may wait for its response, or
// a GET for the next bytes of its body, before it is abandoned and retried
// (default DefaultStallTimeout, at least 10 ms).
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("stall timeout %v is under 10ms", d)
		}
		o.stallTimeout = d
		return nil
	}
}

// WithLogger receives a debug record "objstore retrying" for each retry
// (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error { o.log = l; return nil }
}

// CheckOptions applies opts to a scratch configuration and returns the
// first refusal, so a caller that makes clients later can check options
// now.
func CheckOptions(opts ...Option) error {
	_, err := resolveOptions(opts)
	return err
}

// resolveOptions applies opts to the defaults, and DeadlineEnv where no
// option set the retry deadline.
func resolveOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	if !o.deadlineSet {
		d, ok, err := deadlineFromEnv()
		if err != nil {
			return o, err
		}
		if ok {
			o.retryDeadline = d
		}
	}
	return o, nil
}
