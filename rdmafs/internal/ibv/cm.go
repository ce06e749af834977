package ibv

/*
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "lib.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rdma_cm event types (enum rdma_cm_event_type).
const (
	EventAddrResolved   = C.GDV_CM_EVENT_ADDR_RESOLVED
	EventAddrError      = C.GDV_CM_EVENT_ADDR_ERROR
	EventRouteResolved  = C.GDV_CM_EVENT_ROUTE_RESOLVED
	EventRouteError     = C.GDV_CM_EVENT_ROUTE_ERROR
	EventConnectRequest = C.GDV_CM_EVENT_CONNECT_REQUEST
	EventConnectError   = C.GDV_CM_EVENT_CONNECT_ERROR
	EventUnreachable    = C.GDV_CM_EVENT_UNREACHABLE
	EventRejected       = C.GDV_CM_EVENT_REJECTED
	EventEstablished    = C.GDV_CM_EVENT_ESTABLISHED
	EventDisconnected   = C.GDV_CM_EVENT_DISCONNECTED
	EventDeviceRemoval  = C.GDV_CM_EVENT_DEVICE_REMOVAL
	EventAddrChange     = C.GDV_CM_EVENT_ADDR_CHANGE
	EventTimewaitExit   = C.GDV_CM_EVENT_TIMEWAIT_EXIT
)

// ErrClosed is returned by waits interrupted by Close or Interrupt.
var ErrClosed = errors.New("RDMA event channel closed")

// EventChannel is an rdma_cm event channel. Next may be called from one
// goroutine at a time; Interrupt from any.
type EventChannel struct {
	l    *Lib
	c    *C.struct_gdv_event_channel
	wait *waiter
}

// NewEventChannel creates an event channel whose waits go through the Go
// runtime's poller.
func (l *Lib) NewEventChannel() (*EventChannel, error) {
	c, err := C.gdv_create_event_channel(l.c)
	if c == nil {
		return nil, fmt.Errorf("rdma_create_event_channel: %w", errnoOr(err, syscall.ENODEV))
	}
	w, err := newWaiter(int(c.fd), "rdma_cm event channel")
	if err != nil {
		C.gdv_destroy_event_channel(l.c, c)
		return nil, err
	}
	return &EventChannel{l: l, c: c, wait: w}, nil
}

// Event is one rdma_cm event, copied out of librdmacm and acknowledged.
type Event struct {
	Kind   int
	Status int
	// ID is the identifier the event is about; for a connect request, a
	// new identifier the caller now owns (accept, reject, destroy).
	ID *ID
	// Listen is the listening identifier of a connect request.
	Listen *ID
	// Priv is the private data of a connect request, establishment or
	// reject (over InfiniBand, padded with zeros).
	Priv []byte
}

// Next waits for the next event. It returns ErrClosed once Interrupt was
// called.
func (ch *EventChannel) Next() (Event, error) {
	var out C.struct_gdv_cm_ev
	err := ch.wait.do(func() (bool, error) {
		rc, err := C.gdv_next_cm_event(ch.l.c, ch.c, &out)
		if rc == 0 {
			return true, nil
		}
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			return false, nil
		}
		return true, fmt.Errorf("rdma_get_cm_event: %w", errnoOr(err, syscall.EIO))
	})
	if err != nil {
		return Event{}, err
	}
	ev := Event{Kind: int(out.event), Status: int(out.status), ID: wrapID(ch.l, out.id), Listen: wrapID(ch.l, out.listen_id)}
	if out.priv_len > 0 {
		ev.Priv = C.GoBytes(unsafe.Pointer(&out.priv[0]), C.int(out.priv_len))
	}
	return ev, nil
}

// Interrupt makes a waiting Next, and every later one, return ErrClosed.
func (ch *EventChannel) Interrupt() { ch.wait.close() }

// Destroy interrupts waits and destroys the channel. Every identifier on it
// must have been destroyed first (librdmacm's rule).
func (ch *EventChannel) Destroy() {
	ch.wait.close()
	C.gdv_destroy_event_channel(ch.l.c, ch.c)
}

// ID is an rdma_cm identifier.
type ID struct {
	l *Lib
	c *C.struct_gdv_cm_id
}

func wrapID(l *Lib, c *C.struct_gdv_cm_id) *ID {
	if c == nil {
		return nil
	}
	return &ID{l: l, c: c}
}

// Key identifies the identifier: events about it carry the same key.
func (id *ID) Key() uintptr { return uintptr(unsafe.Pointer(id.c)) }

// CreateID creates an identifier in the TCP port space on ch.
func (ch *EventChannel) CreateID() (*ID, error) {
	var c *C.struct_gdv_cm_id
	if rc, err := C.gdv_create_id(ch.l.c, ch.c, &c); rc != 0 {
		return nil, fmt.Errorf("rdma_create_id: %w", errnoOr(err, syscall.ENOMEM))
	}
	return &ID{l: ch.l, c: c}, nil
}

// sockaddr is a C sockaddr_storage holding ap.
func sockaddr(ap netip.AddrPort) (*C.struct_sockaddr, func(), error) {
	ss := (*[C.sizeof_struct_sockaddr_storage]byte)(C.calloc(1, C.sizeof_struct_sockaddr_storage))
	free := func() { C.free(unsafe.Pointer(ss)) }
	a := ap.Addr()
	binary.BigEndian.PutUint16(ss[2:], ap.Port())
	switch {
	case a.Is4():
		binary.NativeEndian.PutUint16(ss[0:], unix.AF_INET)
		a4 := a.As4()
		copy(ss[4:], a4[:])
	case a.Is6():
		binary.NativeEndian.PutUint16(ss[0:], unix.AF_INET6)
		a16 := a.As16()
		copy(ss[8:], a16[:])
		if z := a.Zone(); z != "" {
			ifi, err := net.InterfaceByName(z)
			if err != nil {
				free()
				return nil, nil, fmt.Errorf("address %s: zone: %w", ap, err)
			}
			binary.NativeEndian.PutUint32(ss[24:], uint32(ifi.Index))
		}
	default:
		free()
		return nil, nil, fmt.Errorf("address %s is not an IP address", ap)
	}
	return (*C.struct_sockaddr)(unsafe.Pointer(ss)), free, nil
}

// addrPort reads a C sockaddr (IPv4 or IPv6).
func addrPort(sa *C.struct_sockaddr_storage) netip.AddrPort {
	b := (*[C.sizeof_struct_sockaddr_storage]byte)(unsafe.Pointer(sa))
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b[0:]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port)
	}
	return netip.AddrPort{}
}

// Bind binds the identifier to a local address (rdma_bind_addr).
func (id *ID) Bind(ap netip.AddrPort) error {
	sa, free, err := sockaddr(ap)
	if err != nil {
		return err
	}
	defer free()
	if rc, err := C.gdv_bind_addr(id.l.c, id.c, sa); rc != 0 {
		return fmt.Errorf("rdma_bind_addr %s: %w", ap, errnoOr(err, syscall.EADDRNOTAVAIL))
	}
	return nil
}

// Listen starts listening (rdma_listen).
func (id *ID) Listen(backlog int) error {
	if rc, err := C.gdv_listen(id.l.c, id.c, C.int(backlog)); rc != 0 {
		return fmt.Errorf("rdma_listen: %w", errnoOr(err, syscall.EINVAL))
	}
	return nil
}

// ResolveAddr resolves dst from the source address src (rdma_resolve_addr);
// the result arrives as an event.
func (id *ID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	ssa, sfree, err := sockaddr(src)
	if err != nil {
		return err
	}
	defer sfree()
	dsa, dfree, err := sockaddr(dst)
	if err != nil {
		return err
	}
	defer dfree()
	if rc, err := C.gdv_resolve_addr(id.l.c, id.c, ssa, dsa, C.int(timeout.Milliseconds())); rc != 0 {
		return fmt.Errorf("rdma_resolve_addr %s from %s: %w", dst, src.Addr(), errnoOr(err, syscall.EHOSTUNREACH))
	}
	return nil
}

// ResolveRoute resolves the route (rdma_resolve_route); the result arrives
// as an event.
func (id *ID) ResolveRoute(timeout time.Duration) error {
	if rc, err := C.gdv_resolve_route(id.l.c, id.c, C.int(timeout.Milliseconds())); rc != 0 {
		return fmt.Errorf("rdma_resolve_route: %w", errnoOr(err, syscall.EHOSTUNREACH))
	}
	return nil
}

// Context is the device the identifier is bound to, nil before binding to
// one.
func (id *ID) Context() *Context { return wrapContext(id.l, id.c.verbs) }

// LocalAddr and PeerAddr are the identifier's addresses.
func (id *ID) LocalAddr() netip.AddrPort {
	return addrPort(C.gdv_id_src(id.c))
}

// PeerAddr is the remote address.
func (id *ID) PeerAddr() netip.AddrPort {
	return addrPort(C.gdv_id_dst(id.c))
}

// CreateQP creates the identifier's RC queue pair on pd, with cq for both
// queues (rdma_create_qp).
func (id *ID) CreateQP(pd *PD, cq *CQ, sendWR, recvWR int) (*QP, error) {
	if rc, err := C.gdv_create_qp(id.l.c, id.c, pd.c, cq.c, C.uint32_t(sendWR), C.uint32_t(recvWR)); rc != 0 {
		return nil, fmt.Errorf("rdma_create_qp (%d send, %d receive requests): %w", sendWR, recvWR, errnoOr(err, syscall.ENOMEM))
	}
	return &QP{l: id.l, c: id.c.qp}, nil
}

// DestroyQP destroys the identifier's queue pair (rdma_destroy_qp).
func (id *ID) DestroyQP() {
	if id.c.qp != nil {
		C.gdv_destroy_qp(id.l.c, id.c)
	}
}

// Connect sends a connection request carrying priv (rdma_connect),
// granting the peer responder RDMA READ resources and asking initiator of
// it.
func (id *ID) Connect(priv []byte, responder, initiator uint8) error {
	p, free, err := cbytes(priv)
	if err != nil {
		return err
	}
	defer free()
	if rc, err := C.gdv_connect(id.l.c, id.c, p, C.uint8_t(len(priv)), C.uint8_t(responder), C.uint8_t(initiator)); rc != 0 {
		return fmt.Errorf("rdma_connect: %w", errnoOr(err, syscall.ECONNREFUSED))
	}
	return nil
}

// Accept accepts a connection request (rdma_accept), granting the peer
// responder RDMA READ (and atomic) resources and asking initiator of it.
func (id *ID) Accept(responder, initiator uint8) error {
	if rc, err := C.gdv_accept(id.l.c, id.c, C.uint8_t(responder), C.uint8_t(initiator)); rc != 0 {
		return fmt.Errorf("rdma_accept: %w", errnoOr(err, syscall.ECONNABORTED))
	}
	return nil
}

// Reject refuses a connection request with priv as the reason.
func (id *ID) Reject(priv []byte) error {
	p, free, err := cbytes(priv)
	if err != nil {
		return err
	}
	defer free()
	if rc, err := C.gdv_reject(id.l.c, id.c, p, C.uint8_t(len(priv))); rc != 0 {
		return fmt.Errorf("rdma_reject: %w", errnoOr(err, syscall.EINVAL))
	}
	return nil
}

// Disconnect disconnects (rdma_disconnect), moving the queue pair to the
// error state.
func (id *ID) Disconnect() error {
	if rc, err := C.gdv_disconnect(id.l.c, id.c); rc != 0 {
		return fmt.Errorf("rdma_disconnect: %w", errnoOr(err, syscall.EINVAL))
	}
	return nil
}

// Destroy destroys the identifier (rdma_destroy_id). Its queue pair must be
// gone; it waits until every event about it was acknowledged (Next does at
// once).
func (id *ID) Destroy() error {
	if rc, err := C.gdv_destroy_id(id.l.c, id.c); rc != 0 {
		return fmt.Errorf("rdma_destroy_id: %w", errnoOr(err, syscall.EINVAL))
	}
	return nil
}

func cbytes(b []byte) (unsafe.Pointer, func(), error) {
	if len(b) > 255 {
		return nil, nil, fmt.Errorf("rdma_cm private data of %d bytes: at most 255", len(b))
	}
	if len(b) == 0 {
		return nil, func() {}, nil
	}
	p := C.CBytes(b)
	return p, func() { C.free(p) }, nil
}

// waiter waits on a non-blocking file descriptor owned by the library
// through the Go runtime's poller, using a duplicate so that closing it
// (which interrupts waits) leaves the library's descriptor alone.
type waiter struct {
	mu sync.Mutex
	f  *os.File
	rc syscall.RawConn
}

func newWaiter(fd int, name string) (*waiter, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("%s: set non-blocking: %w", name, err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: dup: %w", name, err)
	}
	f := os.NewFile(uintptr(dup), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &waiter{f: f, rc: rc}, nil
}

// do calls try until it reports done, waiting for the descriptor to become
// readable in between; it returns ErrClosed once close was called.
func (w *waiter) do(try func() (bool, error)) error {
	var res error
	err := w.rc.Read(func(uintptr) bool {
		done, err := try()
		res = err
		return done
	})
	if err != nil {
		return ErrClosed
	}
	return res
}

func (w *waiter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}
