package rdmafs

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ServerOption configures a Server. An option checks its value and
// NewServer fails with its error, as a client's Option does: a value
// outside the documented range is refused, never silently clamped.
type ServerOption func(*serverConfig) error

// Server defaults and caps.
const (
	DefaultCredits          = 16
	MaxCredits              = 1024
	DefaultPoolBuffers      = 64
	DefaultBufferSize       = 1 << 20
	MinBufferSize           = 4 << 10
	MaxBufferSize           = 1 << 30
	DefaultConnBuffers      = 4
	DefaultMaxRead          = 64 << 20
	MaxMaxRead              = 1 << 30
	DefaultMaxConns         = 1024
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultReadTimeout      = 30 * time.Second
	DefaultWriteTimeout     = 30 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultDrainTimeout     = 30 * time.Second
)

// WithServerToken sets the shared secret clients must prove they know
// (at least MinTokenLen bytes). A server needs it, or
// WithInsecureNoToken, and refuses both.
func WithServerToken(token []byte) ServerOption {
	return func(c *serverConfig) error {
		if _, err := CheckToken(token, "server token"); err != nil {
			return err
		}
		c.Token = token
		return nil
	}
}

// WithInsecureNoToken lets anyone who can reach the port read the export.
func WithInsecureNoToken() ServerOption {
	return func(c *serverConfig) error { c.InsecureNoToken = true; return nil }
}

// WithCredits sets the number of outstanding requests each connection may
// have (DefaultCredits, 1 to MaxCredits).
func WithCredits(n int) ServerOption {
	return func(c *serverConfig) error {
		if n < 1 || n > MaxCredits {
			return fmt.Errorf("%d credits: want 1 to %d", n, MaxCredits)
		}
		c.Credits = n
		return nil
	}
}

// WithBufferPool sets the pool of data buffers, whose buffers × size bytes
// bound the data memory of the whole server (DefaultPoolBuffers of
// DefaultBufferSize; size MinBufferSize to MaxBufferSize, at most 64 GiB
// in all). READs are served in pieces of size.
func WithBufferPool(buffers, size int) ServerOption {
	return func(c *serverConfig) error {
		switch {
		case buffers < 1:
			return fmt.Errorf("%d pool buffers: want at least 1", buffers)
		case size < MinBufferSize || size > MaxBufferSize:
			return fmt.Errorf("buffer size %d: want %d B to %d GiB", size, MinBufferSize, MaxBufferSize>>30)
		case int64(buffers)*int64(size) > maxPoolBytes:
			return fmt.Errorf("%d buffers of %d bytes is over the %d GiB limit on data buffers", buffers, size, maxPoolBytes>>30)
		}
		c.PoolBuffers, c.BufferSize = buffers, size
		return nil
	}
}

// WithConnBuffers sets the most pool buffers one connection may hold at
// once (DefaultConnBuffers, at least 1), so that slow clients cannot
// starve the others.
func WithConnBuffers(n int) ServerOption {
	return positive("connection buffers", n, func(c *serverConfig) { c.ConnBuffers = n })
}

// WithMaxRead sets the largest READ length accepted (DefaultMaxRead, 1 to
// MaxMaxRead).
func WithMaxRead(n int) ServerOption {
	return func(c *serverConfig) error {
		if n < 1 || n > MaxMaxRead {
			return fmt.Errorf("max read %d: want 1 to %d", n, MaxMaxRead)
		}
		c.MaxRead = n
		return nil
	}
}

// WithMaxConns sets the most open connections; more are refused with BUSY
// (DefaultMaxConns, at least 1).
func WithMaxConns(n int) ServerOption {
	return positive("connections", n, func(c *serverConfig) { c.MaxConns = n })
}

// WithDigestBlocks bounds the CRC32Cs of 1 MiB file blocks the server
// keeps so that READs asking for a CRC of bytes it has already summed go
// out with sendfile (default 1,048,576 blocks: 4 MiB of CRCs for 1 TiB of
// files; negative: keep none, sum every READ).
func WithDigestBlocks(n int) ServerOption {
	return func(c *serverConfig) error { c.DigestBlocks = n; return nil }
}

// WithTCPCongestion sets the congestion control of the server's TCP
// connections, the direction that carries the data (default
// DefaultTCPCongestion; SystemTCPCongestion keeps the kernel's default;
// CheckTCPCongestion says which names are taken). A name the kernel lacks
// or refuses leaves the kernel's default and is logged once. Why cubic:
// docs/PROTOCOL.md, Transports.
func WithTCPCongestion(name string) ServerOption {
	return func(c *serverConfig) error {
		if err := CheckTCPCongestion(name); err != nil {
			return err
		}
		c.TCPCongestion = name
		return nil
	}
}

// WithHandshakeTimeout bounds the handshake (DefaultHandshakeTimeout).
func WithHandshakeTimeout(d time.Duration) ServerOption {
	return timeout("handshake", d, func(c *serverConfig) { c.HandshakeTimeout = d })
}

// WithReadTimeout bounds reading one frame once its first byte arrived
// (DefaultReadTimeout).
func WithReadTimeout(d time.Duration) ServerOption {
	return timeout("read", d, func(c *serverConfig) { c.ReadTimeout = d })
}

// WithWriteTimeout bounds writing one frame or data piece
// (DefaultWriteTimeout).
func WithWriteTimeout(d time.Duration) ServerOption {
	return timeout("write", d, func(c *serverConfig) { c.WriteTimeout = d })
}

// WithIdleTimeout closes connections without outstanding requests after d
// (DefaultIdleTimeout).
func WithIdleTimeout(d time.Duration) ServerOption {
	return timeout("idle", d, func(c *serverConfig) { c.IdleTimeout = d })
}

// WithDrainTimeout bounds the graceful drain when Serve's context ends
// (DefaultDrainTimeout).
func WithDrainTimeout(d time.Duration) ServerOption {
	return timeout("drain", d, func(c *serverConfig) { c.DrainTimeout = d })
}

// WithServerLogger sends the server's structured logs to l (default
// slog.Default()).
func WithServerLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) error {
		if l == nil {
			return errors.New("a nil server logger")
		}
		c.Logger = l
		return nil
	}
}

func positive(what string, n int, set func(*serverConfig)) ServerOption {
	return func(c *serverConfig) error {
		if n < 1 {
			return fmt.Errorf("%d %s: want at least 1", n, what)
		}
		set(c)
		return nil
	}
}

func timeout(what string, d time.Duration, set func(*serverConfig)) ServerOption {
	return func(c *serverConfig) error {
		if d <= 0 {
			return fmt.Errorf("%s timeout %v: want a positive duration", what, d)
		}
		set(c)
		return nil
	}
}
