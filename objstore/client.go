package objstore

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

// Client reads objects from one S3-compatible store. It is safe for
// concurrent use; its connections are kept and reused until Close.
type Client struct {
	opts       options
	s3         atomic.Pointer[s3.Client] // replaced by forgetCredentials
	newS3      func() *s3.Client
	mu         sync.Mutex
	transports []*http.Transport       // built by the SDK's HTTP client, for Close
	creds      aws.CredentialsProvider // nil when anonymous; else cache over chain
	cache      *aws.CredentialsCache
	chain      *chainCredentials
	region     string
	endpoint   string // for messages: the base URL requests go to
	pathStyle  bool
	sem        chan struct{} // one token per GET in flight
	log        *slog.Logger
	// reached is set once any request got a response (or succeeded):
	// from then on, failures to connect are retried as an outage.
	reached atomic.Bool
}

// New makes a client. It reads the AWS configuration (environment, shared
// files, AWS_PROFILE) but sends nothing: credentials are fetched, and
// refused, on the first request.
func New(ctx context.Context, opts ...Option) (*Client, error) {
	o, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{opts: o, sem: make(chan struct{}, o.concurrency), log: o.log}
	if c.log == nil {
		c.log = slog.Default()
	}
	load := []func(*config.LoadOptions) error{
		config.WithHTTPClient(c.newHTTPClient(o)), // one client, kept across reloads
		// The SDK's own lines ("falling back to IMDSv1", ...) go to the
		// logger at debug level, not straight to stderr: what matters
		// reaches the caller as an error.
		config.WithLogger(sdkLogger{c.log}),
		// Retries are ours: per range, resuming where a body broke, up
		// to a deadline (the SDK's retryer sees only the response head).
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		// Checksums are ours too: verified on whole-object reads only,
		// where the store's x-amz-checksum-* covers the bytes read.
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
	}
	if o.region != "" {
		load = append(load, config.WithRegion(o.region))
	}
	if o.profile != "" {
		load = append(load, config.WithSharedConfigProfile(o.profile))
	}
	switch {
	case o.anonymous:
		load = append(load, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	case o.static != nil:
		load = append(load, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.static.key, o.static.secret, o.static.token)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("reading the AWS configuration (environment, shared config and credentials files, AWS_PROFILE): %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	c.region = cfg.Region
	if !o.anonymous {
		// The chain is resolved again (from the environment and files as
		// they are then) after the store refuses its credentials, so a
		// long-lived client picks up keys fixed meanwhile.
		c.chain = &chainCredentials{p: cfg.Credentials, load: func(ctx context.Context) (aws.CredentialsProvider, error) {
			cfg, err := config.LoadDefaultConfig(ctx, load...)
			return cfg.Credentials, err
		}}
		c.cache = aws.NewCredentialsCache(c.chain)
		c.creds = c.cache
	}
	first := true // the endpoint and style are settled by the first client
	s3opts := func(so *s3.Options) {
		if c.cache != nil {
			so.Credentials = c.cache
		}
		if o.endpoint != "" {
			so.BaseEndpoint = aws.String(o.endpoint)
		}
		if first {
			first = false
			c.pathStyle = so.BaseEndpoint != nil
			if o.pathStyle != nil {
				c.pathStyle = *o.pathStyle
			}
			if so.BaseEndpoint != nil {
				c.endpoint = *so.BaseEndpoint
			} else {
				c.endpoint = "https://s3." + cfg.Region + ".amazonaws.com"
			}
		}
		so.UsePathStyle = c.pathStyle
		so.DisableLogOutputChecksumValidationSkipped = true
	}
	c.newS3 = func() *s3.Client { return s3.NewFromConfig(cfg, s3opts) }
	c.s3.Store(c.newS3())
	return c, nil
}

// newHTTPClient keeps up to the concurrency's worth of idle connections
// per host for reuse, speaks HTTP/1.1 only (one TCP stream per range
// rather than many ranges multiplexed on one), and never asks for
// compression, which would make Content-Length and ranges lie about bytes.
// It is the SDK's buildable client, so a CA bundle from AWS_CA_BUNDLE or
// the shared config still applies; the transports it builds are kept so
// Close can drop their idle connections.
func (c *Client) newHTTPClient(o options) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = min(o.stallTimeout, 30*time.Second)
			d.KeepAlive = 30 * time.Second
		}).
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 2 * o.concurrency
			tr.MaxIdleConnsPerHost = o.concurrency
			tr.IdleConnTimeout = 90 * time.Second
			tr.TLSHandshakeTimeout = min(o.stallTimeout, 10*time.Second)
			tr.ResponseHeaderTimeout = o.stallTimeout
			tr.DisableCompression = true
			tr.ForceAttemptHTTP2 = false
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			c.mu.Lock()
			c.transports = append(c.transports, tr)
			c.mu.Unlock()
		})
}

// Endpoint is the base URL requests go to, for messages.
func (c *Client) Endpoint() string { return c.endpoint }

// Region is the region requests are signed for.
func (c *Client) Region() string { return c.region }

// Close drops the idle connections. Objects opened by the client must not
// be read afterwards.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tr := range c.transports {
		tr.CloseIdleConnections()
	}
	return nil
}

// chainCredentials is the credential chain, resolved again on the next
// Retrieve after forget.
type chainCredentials struct {
	mu    sync.Mutex
	p     aws.CredentialsProvider
	load  func(context.Context) (aws.CredentialsProvider, error)
	stale bool
}

func (c *chainCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stale {
		p, err := c.load(ctx)
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("reading the AWS configuration again: %w", err)
		}
		c.p, c.stale = p, false
	}
	if c.p == nil {
		return aws.Credentials{}, fmt.Errorf("no credential provider configured")
	}
	return c.p.Retrieve(ctx)
}

// forgetCredentials has the next request resolve the credential chain
// again (environment, shared files, AWS_PROFILE, web identity, instance
// metadata), after the store refused the credentials or none were found:
// keys fixed meanwhile are then used without a new client.
func (c *Client) forgetCredentials() {
	if c.chain == nil {
		return
	}
	c.chain.mu.Lock()
	c.chain.stale = true
	c.chain.mu.Unlock()
	c.cache.Invalidate()
	// A new API client, for a new signer: the SDK's signer caches the
	// signing key derived from a secret by access key id alone, so a
	// secret fixed under the same key id would still sign with the old.
	c.s3.Store(c.newS3())
}

// credentialSource names where the client's credentials come from, for
// errors: the SDK's provider name, the profile and the access key id
// (never the secret).
func (c *Client) credentialSource(ctx context.Context) string {
	if c.creds == nil {
		return "anonymous (unsigned requests)"
	}
	cr, err := c.creds.Retrieve(ctx)
	if err != nil {
		return "none found (" + err.Error() + ")"
	}
	src := describeSource(cr.Source)
	if c.opts.profile != "" {
		src += ", profile " + c.opts.profile
	}
	return src + ", access key " + cr.AccessKeyID
}

// describeSource turns the SDK's provider names into what a user set.
func describeSource(s string) string {
	switch {
	case s == credentials.StaticCredentialsName:
		return "static credentials given to the client"
	case s == config.CredentialsSourceName:
		return "the environment (AWS_ACCESS_KEY_ID)"
	case strings.HasPrefix(s, "SharedConfigCredentials"):
		return "the shared credentials file" + strings.TrimPrefix(s, "SharedConfigCredentials")
	case s == stscreds.WebIdentityProviderName:
		return "a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)"
	case s == stscreds.ProviderName:
		return "an assumed role (role_arn in the shared config file)"
	case s == ec2rolecreds.ProviderName:
		return "instance metadata (EC2 role)"
	case s == ssocreds.ProviderName:
		return "AWS IAM Identity Center (SSO)"
	case s == "":
		return "an unnamed provider"
	}
	return s
}

// sdkLogger passes the AWS SDK's log lines to slog at debug level.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Logf(class logging.Classification, format string, v ...any) {
	l.log.Debug("aws sdk: "+fmt.Sprintf(format, v...), "class", string(class))
}
