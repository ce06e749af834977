package rdmafs

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Client. An option checks its value and Dial fails
// with its error, as klauspost/compress's options do: a value outside the
// documented range is refused, never silently clamped.
type Option func(*clientConfig) error

// Client defaults and caps.
const (
	DefaultConnections     = 4
	MaxConnections         = 64
	DefaultRequestsPerConn = 4
	MaxRequestsPerConn     = 1024
	DefaultTimeout         = 30 * time.Second
	DefaultRetryDeadline   = 30 * time.Second
	DefaultChunkSize       = 4 << 20
	MinChunkSize           = 4 << 10
	MaxChunkSize           = 1 << 30
)

type clientConfig struct {
	token         []byte
	conns         int
	perConn       int
	timeout       time.Duration
	retryDeadline time.Duration
	chunk         int
	crc           bool
	transport     Transport
	device        DeviceMemory
	log           *slog.Logger
}

func defaultClientConfig() clientConfig {
	return clientConfig{
		conns:         DefaultConnections,
		perConn:       DefaultRequestsPerConn,
		timeout:       DefaultTimeout,
		retryDeadline: DefaultRetryDeadline,
		chunk:         DefaultChunkSize,
		crc:           true,
		transport:     TCP(),
		log:           slog.Default(),
	}
}

// newClientConfig applies opts to the defaults; the first refused option
// is the error.
func newClientConfig(opts []Option) (clientConfig, error) {
	cfg := defaultClientConfig()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// CheckOptions reports the first option Dial would refuse, without
// dialing: a caller that dials later (a pool of clients made on first use)
// can refuse bad settings up front.
func CheckOptions(opts ...Option) error {
	_, err := newClientConfig(opts)
	return err
}

// WithToken sets the shared secret. Without it the client can only talk to
// a server that runs without authentication; with it the client refuses a
// server that cannot prove it knows the same token. A token shorter than
// MinTokenLen bytes is refused here, before any server sees it (a server
// would refuse it too, and only report that the tokens differ).
func WithToken(token []byte) Option {
	return func(c *clientConfig) error {
		tok, err := CheckToken(token, "rdmafs token")
		if err != nil {
			return err
		}
		c.token = append([]byte(nil), tok...)
		return nil
	}
}

// WithConnections sets how many connections reads are spread over
// (default DefaultConnections, 1 to MaxConnections).
func WithConnections(n int) Option {
	return func(c *clientConfig) error {
		if n < 1 || n > MaxConnections {
			return fmt.Errorf("%d connections: want 1 to %d", n, MaxConnections)
		}
		c.conns = n
		return nil
	}
}

// WithRequestsPerConn sets how many requests the client keeps outstanding
// on each connection (default DefaultRequestsPerConn, 1 to
// MaxRequestsPerConn; the server's credits cap it further).
func WithRequestsPerConn(n int) Option {
	return func(c *clientConfig) error {
		if n < 1 || n > MaxRequestsPerConn {
			return fmt.Errorf("%d requests per connection: want 1 to %d", n, MaxRequestsPerConn)
		}
		c.perConn = n
		return nil
	}
}

// WithTimeout bounds dialing plus handshake, and each request's wait for
// its reply (default DefaultTimeout; must be positive). A request that
// times out drops its connection and is retried like a lost connection.
func WithTimeout(d time.Duration) Option {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("timeout %v: want a positive duration", d)
		}
		c.timeout = d
		return nil
	}
}

// WithRetryDeadline bounds how long an idempotent request (all of them:
// stat, list, read) is retried after lost connections, redialing and
// re-authenticating each time (default DefaultRetryDeadline; 0 disables
// retries).
func WithRetryDeadline(d time.Duration) Option {
	return func(c *clientConfig) error {
		if d < 0 {
			return fmt.Errorf("retry deadline %v: want 0 or more", d)
		}
		c.retryDeadline = d
		return nil
	}
}

// WithChunkSize sets the size of the pieces large reads are split into and
// pipelined over the connections (default DefaultChunkSize, MinChunkSize
// to MaxChunkSize; the server's maximum read caps it further). Chunk sizes
// are int64 bytes, as loader's are.
func WithChunkSize(n int64) Option {
	return func(c *clientConfig) error {
		if n < MinChunkSize || n > MaxChunkSize {
			return fmt.Errorf("chunk size %d: want %d to %d bytes", n, MinChunkSize, MaxChunkSize)
		}
		c.chunk = int(n) // at most MaxChunkSize: an int on every platform
		return nil
	}
}

// WithCRC turns CRC32C verification of read data on or off (default on).
func WithCRC(on bool) Option {
	return func(c *clientConfig) error { c.crc = on; return nil }
}

// WithTransport selects the transport (default TCP()); nil is refused.
func WithTransport(t Transport) Option {
	return func(c *clientConfig) error {
		if t == nil {
			return errors.New("nil transport")
		}
		c.transport = t
		return nil
	}
}

// WithLogger sets the logger for connection events (default
// slog.Default()); nil keeps the default.
func WithLogger(l *slog.Logger) Option {
	return func(c *clientConfig) error {
		if l != nil {
			c.log = l
		}
		return nil
	}
}

// WithDeviceMemory lets File.ReadAtDevice register GPU memory for RDMA
// through dm (cufile.RDMAMemory implements it) for every file of the
// client; File.WithDeviceMemory sets it for one file. Without either,
// ReadAtDevice fails with ErrNoGPUDirect.
func WithDeviceMemory(dm DeviceMemory) Option {
	return func(c *clientConfig) error { c.device = dm; return nil }
}
