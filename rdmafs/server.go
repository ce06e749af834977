package rdmafs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// maxPoolBytes bounds PoolBuffers × BufferSize, so a mistyped flag is an
// error and not an out-of-memory crash.
const maxPoolBytes = 64 << 30

// serverConfig is what a Server runs with: the ServerOptions applied to
// the defaults. In-package tests fill it directly (newServer); zero fields
// take the defaults.
type serverConfig struct {
	// Root is the directory exported read-only. Required.
	Root string
	// Token is the shared secret clients must prove they know. Empty is
	// refused unless InsecureNoToken is set.
	Token []byte
	// InsecureNoToken lets anyone who can reach the port read the export.
	InsecureNoToken bool
	// Credits is the number of outstanding requests each connection may
	// have (default 16, at most 1024).
	Credits int
	// PoolBuffers × BufferSize bounds the data memory of the whole server
	// (default 64 × 1 MiB, at most 64 GiB). READs are served in
	// BufferSize pieces.
	PoolBuffers int
	BufferSize  int
	// ConnBuffers is the most pool buffers one connection may hold at once
	// (default 4), so that slow clients cannot starve the others.
	ConnBuffers int
	// MaxRead is the largest READ length accepted (default 64 MiB).
	MaxRead int
	// MaxConns is the most open connections; more are refused with BUSY
	// (default 1024).
	MaxConns int
	// DigestBlocks bounds the CRC32Cs of 1 MiB file blocks the server
	// keeps so that READs asking for a CRC of bytes it has already
	// summed go out with sendfile (default 1,048,576 blocks: 4 MiB of
	// CRCs for 1 TiB of files; negative: keep none, sum every READ).
	DigestBlocks int
	// TCPCongestion is the congestion control of the server's TCP
	// connections, the direction that carries the data (default
	// DefaultTCPCongestion; SystemTCPCongestion keeps the kernel's
	// default). A name the kernel lacks or refuses leaves the kernel's
	// default and is logged once. Why cubic: docs/PROTOCOL.md, Transports.
	TCPCongestion string
	// HandshakeTimeout bounds the handshake (default 10 s); ReadTimeout
	// bounds reading one frame once its first byte arrived (default 30 s);
	// WriteTimeout bounds writing one frame or data piece (default 30 s);
	// IdleTimeout closes connections without outstanding requests
	// (default 5 min); DrainTimeout bounds the graceful drain (default 30 s).
	HandshakeTimeout time.Duration
	ReadTimeout      time.Duration
	WriteTimeout     time.Duration
	IdleTimeout      time.Duration
	DrainTimeout     time.Duration
	// Logger receives structured logs (default: slog.Default()).
	Logger *slog.Logger
}

func (c *serverConfig) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Credits, DefaultCredits)
	def(&c.PoolBuffers, DefaultPoolBuffers)
	def(&c.BufferSize, DefaultBufferSize)
	def(&c.ConnBuffers, DefaultConnBuffers)
	def(&c.MaxRead, DefaultMaxRead)
	def(&c.MaxConns, DefaultMaxConns)
	defd(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	defd(&c.ReadTimeout, DefaultReadTimeout)
	defd(&c.WriteTimeout, DefaultWriteTimeout)
	defd(&c.IdleTimeout, DefaultIdleTimeout)
	defd(&c.DrainTimeout, DefaultDrainTimeout)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TCPCongestion == "" {
		c.TCPCongestion = DefaultTCPCongestion
	}
}

// DefaultTCPCongestion is the congestion control a Server asks for on its
// TCP connections unless WithTCPCongestion says otherwise: cubic, which sends
// from the writer's and the ACKs' context, where bbr (a common system
// default) without the fq queueing discipline paces every connection with
// a timer and sends from softirq context, which costs throughput on fast
// links (docs/PROTOCOL.md, Throughput over TCP, has the figures).
const DefaultTCPCongestion = "cubic"

// SystemTCPCongestion given to WithTCPCongestion keeps the kernel's
// default congestion control (net.ipv4.tcp_congestion_control).
const SystemTCPCongestion = "system"

// CheckTCPCongestion reports whether WithTCPCongestion takes name:
// SystemTCPCongestion, or a Linux congestion control name (1 to 15 bytes of
// lower-case letters, digits and underscores). Whether the kernel has it is
// only known when a connection asks for it.
func CheckTCPCongestion(name string) error {
	ok := len(name) > 0 && len(name) <= 15
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}
	if !ok {
		return fmt.Errorf("TCP congestion control %q: want a kernel name such as cubic or bbr (1 to 15 lower-case letters, digits, _), or %q", name, SystemTCPCongestion)
	}
	return nil
}

// Server exports one directory read-only over the rdmafs protocol. Every
// name is resolved beneath the root by os.Root (or, for a READ on Linux,
// by openat2 with RESOLVE_BENEATH, which is as strict; see
// serverfile_linux.go): "..", absolute paths, NUL bytes, over-long names
// and symlinks leading outside are refused.
type Server struct {
	cfg  serverConfig
	root *os.Root
	// rootDir is the root directory itself, and rootConn its descriptor,
	// for openCached; nil where openCached is off, and rawOff says why
	// (rawOpenDir).
	rootDir  *os.File
	rootConn syscall.RawConn
	rawOff   string
	pool     *bufPool
	digests  *digestCache // nil: off
	metrics  *metrics
	log      *slog.Logger
	// authLog rate-limits the failed-login lines: 10 a minute.
	authLog logLimiter

	mu    sync.Mutex
	conns map[*serverConn]struct{}
	wg    sync.WaitGroup
}

// NewServer exports root, a directory, read-only: it opens root and
// allocates the buffer pool. A server needs WithServerToken, or
// WithInsecureNoToken to let anyone who reaches the port read the export;
// the first option refused is the error.
func NewServer(root string, opts ...ServerOption) (*Server, error) {
	cfg := serverConfig{Root: root}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	return newServer(cfg)
}

// newServer checks cfg, with the defaults for its zero fields, and makes
// the Server.
func newServer(cfg serverConfig) (*Server, error) {
	cfg.setDefaults()
	if cfg.Root == "" {
		return nil, errors.New("no export root given")
	}
	if len(cfg.Token) == 0 && !cfg.InsecureNoToken {
		return nil, errors.New("no token: give one (WithServerToken), or WithInsecureNoToken to let anyone who reaches the port read the export")
	}
	if len(cfg.Token) > 0 && cfg.InsecureNoToken {
		return nil, errors.New("both a token and WithInsecureNoToken given; pick one")
	}
	if len(cfg.Token) > 0 {
		if _, err := CheckToken(cfg.Token, "server token"); err != nil {
			return nil, err
		}
	}
	if cfg.Credits > 1024 {
		return nil, fmt.Errorf("%d credits is over the limit of 1024", cfg.Credits)
	}
	if cfg.BufferSize < 4096 || cfg.BufferSize > 1<<30 || cfg.MaxRead > 1<<30 {
		return nil, fmt.Errorf("buffer size %d outside 4096 B to 1 GiB, or max read %d over 1 GiB", cfg.BufferSize, cfg.MaxRead)
	}
	if err := CheckTCPCongestion(cfg.TCPCongestion); err != nil {
		return nil, err
	}
	if int64(cfg.PoolBuffers)*int64(cfg.BufferSize) > maxPoolBytes {
		return nil, fmt.Errorf("%d buffers of %d bytes is over the %d GiB limit on data buffers", cfg.PoolBuffers, cfg.BufferSize, maxPoolBytes>>30)
	}
	fi, err := os.Stat(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("export root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("export root %s is not a directory", cfg.Root)
	}
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("open export root: %w", err)
	}
	s := &Server{
		cfg:     cfg,
		root:    root,
		pool:    newBufPool(cfg.PoolBuffers, cfg.BufferSize),
		digests: newDigestCache(cfg.DigestBlocks),
		metrics: newMetrics(),
		log:     cfg.Logger,
		authLog: logLimiter{interval: time.Minute, burst: 10},
		conns:   map[*serverConn]struct{}{},
	}
	if dir, err := root.Open("."); err != nil {
		s.rawOff = fmt.Sprintf("cannot open the export root's directory: %v", err)
	} else if s.rootConn, s.rawOff = rawOpenDir(dir); s.rootConn != nil {
		s.rootDir = dir
	} else {
		dir.Close()
	}
	return s, nil
}

// Serve accepts connections on ln until ctx is cancelled, then drains:
// it stops accepting, tells each client GOODBYE, lets in-flight requests
// finish (up to DrainTimeout), closes every connection and returns nil.
// It returns an error only when accepting fails for another reason, or
// when a verbs listener cannot register the buffer pool with its RDMA
// devices (the locked-memory limit, usually). Serve closes ln and the
// export root, so a Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.root.Close()
	if s.rootDir != nil {
		defer s.rootDir.Close()
	}
	if br, ok := ln.(bufferRegistrar); ok {
		if err := br.prepare(s.pool.buffers(), s.log); err != nil {
			ln.Close()
			return fmt.Errorf("registering the buffer pool with the RDMA devices: %w", err)
		}
	}
	s.setCongestion(ln)
	s.logOpenPath()
	acceptErr := make(chan error, 1)
	go func() { acceptErr <- s.acceptLoop(ln) }()
	var err error
	select {
	case <-ctx.Done():
		s.log.Info("rdmafs server draining", "connections", s.metrics.connsActive.Load())
	case err = <-acceptErr:
		s.log.Error("rdmafs accept failed", "err", err)
	}
	ln.Close()
	s.drain()
	return err
}

func (s *Server) acceptLoop(ln net.Listener) error {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// EMFILE and friends: back off instead of spinning.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("rdmafs accept", "err", err, "retry_in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.startConn(c)
	}
}

func (s *Server) startConn(c net.Conn) {
	tuneTCP(c)
	s.connCongestion(c)
	s.metrics.connsTotal.Add(1)
	s.mu.Lock()
	if len(s.conns) >= s.cfg.MaxConns {
		s.mu.Unlock()
		s.log.Warn("rdmafs connection refused: at limit", "remote", c.RemoteAddr().String(), "max_conns", s.cfg.MaxConns)
		s.metrics.errorSent(wire.CodeBusy)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write(errorFrame(0, wire.CodeBusy, "server at its connection limit; retry later"))
		c.Close()
		return
	}
	sc := newServerConn(s, c)
	s.conns[sc] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		sc.serve()
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
	}()
}

// setCongestion puts a TCP listener on WithTCPCongestion's name before
// it accepts anything: connections take the congestion control of their
// listener when they are set up. (Switching an established connection
// from bbr is not the same: bbr turns on the kernel's pacing, and the
// connection keeps it.) Failing leaves the kernel's default; either way
// it is logged.
func (s *Server) setCongestion(ln net.Listener) {
	tl, ok := ln.(*net.TCPListener)
	if !ok || s.cfg.TCPCongestion == SystemTCPCongestion {
		return
	}
	if err := setTCPCongestion(tl, s.cfg.TCPCongestion); err != nil {
		s.log.Warn("rdmafs: cannot set the TCP congestion control; connections keep the kernel's default (see net.ipv4.tcp_available_congestion_control and tcp_allowed_congestion_control)",
			"congestion", s.cfg.TCPCongestion, "err", err)
		return
	}
	s.log.Debug("rdmafs TCP congestion control", "congestion", s.cfg.TCPCongestion)
}

// logOpenPath says how READs will open their files: with the raw calls
// of serverfile_linux.go (debug), or through os.Root, and why (info: the
// server then spends more CPU per READ, and an operator should know).
func (s *Server) logOpenPath() {
	if s.rootConn != nil {
		s.log.Debug("rdmafs READs open files with raw openat2 calls beneath the export root")
		return
	}
	s.log.Info("rdmafs READs open files through os.Root with plain system calls", "why", s.rawOff)
}

// connCongestion puts a connection that the kernel set up before Serve
// set its listener (one that waited in the accept backlog) on
// WithTCPCongestion's name, as far as it can: after bbr the kernel may
// keep pacing it. A name the kernel refuses was logged by setCongestion.
func (s *Server) connCongestion(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok || s.cfg.TCPCongestion == SystemTCPCongestion {
		return
	}
	if name, err := tcpCongestion(tc); err == nil && name != s.cfg.TCPCongestion {
		_ = setTCPCongestion(tc, s.cfg.TCPCongestion)
	}
}

// drain asks every connection to finish and waits, force-closing after
// DrainTimeout.
func (s *Server) drain() {
	s.mu.Lock()
	for sc := range s.conns {
		sc.startDrain()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.DrainTimeout):
		s.log.Warn("rdmafs drain timed out; closing connections", "timeout", s.cfg.DrainTimeout)
		s.mu.Lock()
		for sc := range s.conns {
			sc.c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.log.Info("rdmafs server stopped")
}

func errorFrame(id uint32, code wire.Code, msg string) []byte {
	p := wire.ErrorMsg{Code: code, Message: msg}.Append(nil)
	return wire.AppendFrame(nil, wire.TypeError, id, p)
}

// isTemporaryAccept reports accept failures that pass: out of descriptors,
// or a connection reset before it was accepted.
func isTemporaryAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS)
}
