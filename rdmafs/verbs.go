package rdmafs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"

	"github.com/gdsload/gdsload/rdmafs/internal/ibv"
	"github.com/gdsload/gdsload/rdmafs/wire"
)

// Verbs returns the RDMA transport: frames from the client on a TCP
// connection to addr; bulk data by RDMA WRITE, and every frame from the
// server, over an RC queue pair that rdma_cm connects to the same host at
// TCP port + 1 once the TCP handshake has authenticated the client. It
// loads rdma-core (libibverbs.so.1, librdmacm.so.1) at run time and fails
// with an error wrapping ErrNoRDMA when rdma-core is missing or the
// machine has no RDMA device. See docs/PROTOCOL.md for what has run on
// hardware.
func Verbs() (Transport, error) {
	l, err := ibv.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: %v; use the tcp transport", ErrNoRDMA, err)
	}
	devs, err := l.Devices()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: rdma-core %s is installed, but %v; use the tcp transport", ErrNoRDMA, orUnknown(l.Version()), err)
	case len(devs) == 0:
		return nil, fmt.Errorf("%w: rdma-core %s is installed, but this machine has no RDMA device; use the tcp transport", ErrNoRDMA, orUnknown(l.Version()))
	}
	return newVerbsTransport("verbs", newIBVStack(l)), nil
}

func orUnknown(s string) string {
	if s == "" {
		return "of unknown version"
	}
	return s
}

// verbsOptions are the transport's limits; tests shorten them.
type verbsOptions struct {
	// writeTimeout bounds each RDMA WRITE; server frames use the
	// connection's write deadline.
	writeTimeout time.Duration
	// flushTimeout bounds the wait for flush completions after the queue
	// pair is moved to the error state; past it the queue pair is
	// destroyed.
	flushTimeout time.Duration
	// resolveTimeout bounds address and route resolution and the connect.
	resolveTimeout time.Duration
	// maxPending caps sessions waiting for their queue pair;
	// pairTimeout is how long one waits (after WELCOME).
	maxPending  int
	pairTimeout time.Duration
	// lookup resolves the server's name to the addresses the queue pair
	// may connect to.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// recvSlots: receives the client keeps posted; ctrlSlots: the
	// server's registered buffers for frames, per device.
	recvSlots, ctrlSlots int
	// sendWR is the server's send queue depth per connection.
	sendWR int
}

func defaultVerbsOptions() verbsOptions {
	return verbsOptions{
		writeTimeout:   30 * time.Second,
		flushTimeout:   5 * time.Second,
		resolveTimeout: 5 * time.Second,
		maxPending:     256,
		pairTimeout:    10 * time.Second,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		recvSlots: 16,
		ctrlSlots: 64,
		sendWR:    64,
	}
}

// slotSize holds the largest frame: a SEND never exceeds it, and every
// receive the client posts is that big.
const slotSize = wire.HeaderSize + wire.MaxPayload

// verbsTransport implements Transport over an rdmaStack.
type verbsTransport struct {
	name  string
	stack rdmaStack
	opts  verbsOptions

	// leaked counts registrations that could not be undone.
	leaked atomic.Int64
}

func newVerbsTransport(name string, st rdmaStack) *verbsTransport {
	return &verbsTransport{name: name, stack: st, opts: defaultVerbsOptions()}
}

func (t *verbsTransport) Name() string { return t.name }

// The verbs transport registers GPU memory (see deviceRegistrar).
func (t *verbsTransport) registersDeviceMemory() {}

var (
	_ deviceTransport = (*verbsTransport)(nil)
	_ deviceRegistrar = (*verbsClientConn)(nil)
	_ RegionWriter    = (*verbsServerConn)(nil)
)

// leak keeps p's memory pinned for the life of the process: its
// deregistration failed, so the device may still hold it. A runtime/cgo
// handle that is never deleted keeps the Pinner reachable (an unreachable
// Pinner with pins is a fatal error).
func (t *verbsTransport) leak(p *runtime.Pinner) {
	_ = cgo.NewHandle(p)
	t.leaked.Add(1)
}

// rdmaAddr is the RDMA side of a TCP address: port + 1.
func rdmaAddr(ap netip.AddrPort) (netip.AddrPort, error) {
	if ap.Port() == 65535 {
		return netip.AddrPort{}, fmt.Errorf("port %d: the RDMA side needs port+1", ap.Port())
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()+1), nil
}

func tcpAddrPort(a net.Addr) (netip.AddrPort, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%v is not a TCP address", a)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// Listen accepts TCP control connections on addr and queue pairs on
// port + 1.
func (t *verbsTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	tl, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	l, err := newVerbsListener(t, tl)
	if err != nil {
		tl.Close()
		return nil, fmt.Errorf("rdma listen on %s: %w", addr, err)
	}
	return l, nil
}

// Dial connects the TCP control connection; the queue pair follows the
// handshake (connectQueuePair).
func (t *verbsTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tuneTCP(c)
	return newVerbsClientConn(t, c, addr), nil
}

// errors.Is targets for verbs failures the client maps.
var errQueuePairRejected = errors.New("queue pair rejected")
