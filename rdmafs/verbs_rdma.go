//go:build rdma && linux

package rdmafs

// #include "verbs_helpers.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Verbs returns the RDMA transport: frames on a TCP connection to addr,
// bulk data by RDMA WRITE over an RC queue pair that rdma_cm connects to the
// same host at TCP port + 1. It fails with ErrNoRDMA when the machine has no
// RDMA device. Unverified on hardware: see docs/PROTOCOL.md.
func Verbs() (Transport, error) {
	n, err := rdmaDeviceCount()
	if err != nil {
		return nil, fmt.Errorf("%w: no RDMA device found (%v); use --transport tcp", ErrNoRDMA, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no RDMA device found (ibv_get_device_list returned none); use --transport tcp", ErrNoRDMA)
	}
	return verbsTransport{}, nil
}

type verbsTransport struct{}

func (verbsTransport) Name() string { return "verbs" }

// rdmaTimeoutMs bounds address/route resolution and each RDMA WRITE.
const rdmaTimeoutMs = 10000

func rdmaPort(addr string) (host, port string, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n >= 65535 {
		return "", "", fmt.Errorf("port %q: the RDMA side needs port+1 to be valid", p)
	}
	return host, strconv.Itoa(n + 1), nil
}

func resolve(host, port string) (*C.struct_sockaddr_storage, error) {
	if host == "" {
		host = "0.0.0.0"
	}
	ch, cp := C.CString(host), C.CString(port)
	defer C.free(unsafe.Pointer(ch))
	defer C.free(unsafe.Pointer(cp))
	ss := (*C.struct_sockaddr_storage)(C.calloc(1, C.sizeof_struct_sockaddr_storage))
	if rc := C.gdl_resolve(ch, cp, ss); rc != 0 {
		C.free(unsafe.Pointer(ss))
		return nil, fmt.Errorf("resolve %s:%s failed", host, port)
	}
	return ss, nil
}

// cmEvent is one acknowledged rdma_cm event.
type cmEvent struct {
	typ    C.int
	status C.int
	id     *C.struct_rdma_cm_id
	priv   string
}

func waitEvent(ch *C.struct_rdma_event_channel, timeoutMs int) (*cmEvent, error) {
	var ev cmEvent
	var priv [56]C.char
	var n C.int
	rc := C.gdl_wait_event(ch, C.int(timeoutMs), &ev.typ, &ev.status, &ev.id, &priv[0], &n)
	if rc < 0 {
		return nil, verbsErr("rdma_get_cm_event", rc)
	}
	if rc == 0 {
		return nil, nil
	}
	ev.priv = strings.TrimRight(C.GoStringN(&priv[0], n), "\x00")
	return &ev, nil
}

// Dial connects the TCP control stream, then the RC queue pair, passing the
// control stream's local address as rdma_cm private data so the server can
// pair the two.
func (verbsTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	host, rport, err := rdmaPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	ep, err := connectQP(ctx, host, rport, c.LocalAddr().String())
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rdma connect to %s:%s: %w", host, rport, err)
	}
	return &verbsClientConn{Conn: c, ep: ep, regs: map[uint32]*clientMR{}}, nil
}

func connectQP(ctx context.Context, host, port, cookie string) (*qpEndpoint, error) {
	ep := &qpEndpoint{ch: C.rdma_create_event_channel()}
	if ep.ch == nil {
		return nil, errors.New("rdma_create_event_channel failed")
	}
	fail := func(err error) (*qpEndpoint, error) { ep.close(); return nil, err }
	if rc := C.gdl_nonblock(ep.ch); rc != 0 {
		return fail(verbsErr("event channel", rc))
	}
	if C.rdma_create_id(ep.ch, &ep.id, nil, C.RDMA_PS_TCP) != 0 {
		return fail(errors.New("rdma_create_id failed"))
	}
	dst, err := resolve(host, port)
	if err != nil {
		return fail(err)
	}
	defer C.free(unsafe.Pointer(dst))
	if C.rdma_resolve_addr(ep.id, nil, (*C.struct_sockaddr)(unsafe.Pointer(dst)), rdmaTimeoutMs) != 0 {
		return fail(errors.New("rdma_resolve_addr failed"))
	}
	if err := expect(ctx, ep, C.RDMA_CM_EVENT_ADDR_RESOLVED); err != nil {
		return fail(err)
	}
	if C.rdma_resolve_route(ep.id, rdmaTimeoutMs) != 0 {
		return fail(errors.New("rdma_resolve_route failed"))
	}
	if err := expect(ctx, ep, C.RDMA_CM_EVENT_ROUTE_RESOLVED); err != nil {
		return fail(err)
	}
	if rc := C.gdl_setup_qp(ep.id, &ep.pd, &ep.cq); rc != 0 {
		return fail(verbsErr("create queue pair", rc))
	}
	cs := C.CString(cookie)
	defer C.free(unsafe.Pointer(cs))
	if rc := C.gdl_connect(ep.id, unsafe.Pointer(cs), C.int(len(cookie)+1)); rc != 0 {
		return fail(verbsErr("rdma_connect", rc))
	}
	if err := expect(ctx, ep, C.RDMA_CM_EVENT_ESTABLISHED); err != nil {
		return fail(err)
	}
	return ep, nil
}

func expect(ctx context.Context, ep *qpEndpoint, want C.int) error {
	for ctx.Err() == nil {
		ev, err := waitEvent(ep.ch, 100)
		if err != nil {
			return err
		}
		if ev == nil {
			continue
		}
		if ev.typ != want {
			return fmt.Errorf("rdma_cm: got event %s (status %d), want %s",
				C.GoString(C.rdma_event_str(uint32(ev.typ))), ev.status, C.GoString(C.rdma_event_str(uint32(want))))
		}
		return nil
	}
	return ctx.Err()
}

// verbsClientConn is the client end: frames on TCP, regions registered with
// the queue pair's protection domain.
type verbsClientConn struct {
	net.Conn
	ep   *qpEndpoint
	mu   sync.Mutex
	regs map[uint32]*clientMR
	once sync.Once
}

func (c *verbsClientConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		for k, r := range c.regs {
			r.release()
			delete(c.regs, k)
		}
		c.ep.close()
		c.mu.Unlock()
	})
	return c.Conn.Close()
}

func (c *verbsClientConn) Register(p []byte) (Region, error) {
	if len(p) == 0 {
		return Region{}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ep.pd == nil {
		return Region{}, fmt.Errorf("%w: connection closed", ErrRegion)
	}
	r, err := registerClientMR(c.ep, p)
	if err != nil {
		return Region{}, fmt.Errorf("%w: %v", ErrRegion, err)
	}
	c.regs[r.rkey] = r
	return Region{Addr: r.addr, Len: uint64(len(p)), Key: r.rkey}, nil
}

func (c *verbsClientConn) Deregister(rg Region) error {
	if rg.Len == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.regs[rg.Key]
	if r == nil || r.addr != rg.Addr {
		return fmt.Errorf("deregister key 0x%08x: %w: not registered", rg.Key, ErrRegion)
	}
	r.release()
	delete(c.regs, rg.Key)
	return nil
}
