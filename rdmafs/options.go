package rdmafs

import (
	"log/slog"
	"time"
)

// Option configures a Client.
type Option func(*clientConfig)

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
		conns:         4,
		perConn:       4,
		timeout:       30 * time.Second,
		retryDeadline: 30 * time.Second,
		chunk:         4 << 20,
		crc:           true,
		transport:     TCP(),
		log:           slog.Default(),
	}
}

// WithToken sets the shared secret. Without it the client can only talk to
// a server started with --insecure-no-token; with it the client refuses a
// server that cannot prove it knows the same token.
func WithToken(token []byte) Option {
	return func(c *clientConfig) { c.token = append([]byte(nil), token...) }
}

// WithConnections sets how many connections reads are spread over
// (default 4, at least 1, at most 64).
func WithConnections(n int) Option {
	return func(c *clientConfig) { c.conns = min(max(n, 1), 64) }
}

// WithRequestsPerConn sets how many requests the client keeps outstanding
// on each connection (default 4, capped by the server's credits).
func WithRequestsPerConn(n int) Option {
	return func(c *clientConfig) { c.perConn = max(n, 1) }
}

// WithTimeout bounds dialing plus handshake, and each request's wait for
// its reply (default 30 s). A request that times out drops its connection
// and is retried like a lost connection.
func WithTimeout(d time.Duration) Option {
	return func(c *clientConfig) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithRetryDeadline bounds how long an idempotent request (all of them:
// stat, list, read) is retried after lost connections, redialing and
// re-authenticating each time (default 30 s; 0 disables retries).
func WithRetryDeadline(d time.Duration) Option {
	return func(c *clientConfig) { c.retryDeadline = max(d, 0) }
}

// WithChunkSize sets the size of the pieces large reads are split into and
// pipelined over the connections (default 4 MiB; capped by the server's
// maximum read; at least 4 KiB).
func WithChunkSize(n int) Option {
	return func(c *clientConfig) { c.chunk = max(n, 4096) }
}

// WithCRC turns CRC32C verification of read data on or off (default on).
func WithCRC(on bool) Option { return func(c *clientConfig) { c.crc = on } }

// WithTransport selects the transport (default TCP()).
func WithTransport(t Transport) Option {
	return func(c *clientConfig) {
		if t != nil {
			c.transport = t
		}
	}
}

// WithLogger sets the logger for connection events (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *clientConfig) {
		if l != nil {
			c.log = l
		}
	}
}

// WithDeviceMemory lets File.ReadAtDevice register GPU memory for RDMA
// through dm (cufile.RDMAMemory implements it). Without it ReadAtDevice
// fails with ErrNoGPUDirect.
func WithDeviceMemory(dm DeviceMemory) Option {
	return func(c *clientConfig) { c.device = dm }
}
