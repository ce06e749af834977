package rdmafs

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The verbs transport is written against rdmaStack, a narrow Go view of
// librdmacm and libibverbs. Two implementations exist: ibvStack calls
// rdma-core, loaded at run time (verbs_ibv.go); simFabric, in the tests
// only (loopback_*_test.go), models an RDMA fabric in process, with the
// hardware behaviour the transport must cope with: work requests in flight
// until their completion is polled, data placed only when a later message
// on the queue pair forces it, queue pairs that fail as a whole, a
// locked-memory budget, guessable keys.

// rdmaStack opens event channels and lists devices.
type rdmaStack interface {
	// devices returns one open context per RDMA device; an error wrapping
	// errNoDevice when there is none.
	devices() ([]rdmaDevice, error)
	newEventChannel() (cmChannel, error)
}

var (
	errNoDevice = errors.New("no RDMA device")
	// errChannelClosed ends waits on an interrupted channel.
	errChannelClosed = errors.New("rdma channel closed")
)

// cmChannel is an rdma_cm event channel. next is called by one goroutine
// at a time.
type cmChannel interface {
	createID() (cmID, error)
	// next waits for an event, already acknowledged; errChannelClosed
	// after interrupt.
	next() (cmEvent, error)
	interrupt()
	// destroy frees the channel; every identifier on it must be gone.
	destroy()
}

type cmEventKind int

const (
	evOther cmEventKind = iota
	evAddrResolved
	evAddrError
	evRouteResolved
	evRouteError
	evConnectRequest
	evConnectError
	evUnreachable
	evRejected
	evEstablished
	evDisconnected
	evDeviceRemoval
	evTimewaitExit
)

var eventNames = map[cmEventKind]string{
	evOther: "OTHER", evAddrResolved: "ADDR_RESOLVED", evAddrError: "ADDR_ERROR", evRouteResolved: "ROUTE_RESOLVED",
	evRouteError: "ROUTE_ERROR", evConnectRequest: "CONNECT_REQUEST", evConnectError: "CONNECT_ERROR",
	evUnreachable: "UNREACHABLE", evRejected: "REJECTED", evEstablished: "ESTABLISHED",
	evDisconnected: "DISCONNECTED", evDeviceRemoval: "DEVICE_REMOVAL", evTimewaitExit: "TIMEWAIT_EXIT",
}

func (k cmEventKind) String() string { return eventNames[k] }

// cmEvent is one rdma_cm event.
type cmEvent struct {
	kind   cmEventKind
	status int
	// id is the identifier concerned; for a connect request a new one,
	// which the receiver owns.
	id   cmID
	priv []byte
}

// connParams are the connection parameters gdsload sets: RDMA READ
// resources granted to the peer (responder) and asked of it (initiator).
type connParams struct {
	responderResources uint8
	initiatorDepth     uint8
}

// cmID is an rdma_cm identifier.
type cmID interface {
	// key is the same for every event about this identifier.
	key() uintptr
	bind(ap netip.AddrPort) error
	listen(backlog int) error
	resolveAddr(src, dst netip.AddrPort, timeout time.Duration) error
	resolveRoute(timeout time.Duration) error
	// device is the device the identifier is bound to, nil before.
	device() rdmaDevice
	createQP(pd rdmaPD, cq rdmaCQ, sendWR, recvWR int) (rdmaQP, error)
	destroyQP()
	connect(priv []byte, p connParams) error
	accept(p connParams) error
	reject(priv []byte) error
	disconnect() error
	destroy() error
	localAddr() netip.AddrPort
	peerAddr() netip.AddrPort
}

// rdmaDevice is an open device.
type rdmaDevice interface {
	key() uintptr
	name() string
	allocPD() (rdmaPD, error)
	// createCQ creates a completion queue with a completion channel.
	createCQ(entries int) (rdmaCQ, error)
}

// Memory access flags (enum ibv_access_flags).
const (
	accessLocalWrite      = 1
	accessRemoteWrite     = 1 << 1
	accessRemoteRead      = 1 << 2
	accessRelaxedOrdering = 1 << 20
)

// rdmaPD is a protection domain.
type rdmaPD interface {
	// regMR registers Go memory; the caller keeps p alive until dereg
	// succeeds.
	regMR(p []byte, access int) (rdmaMR, error)
	// regAddr registers memory Go does not own (GPU memory, through
	// nvidia-peermem).
	regAddr(addr uintptr, n int, access int) (rdmaMR, error)
	regDmaBuf(fd int, offset uint64, n int, iova uint64, access int) (rdmaMR, error)
	dealloc() error
}

type rdmaMR interface {
	lkey() uint32
	rkey() uint32
	dereg() error
}

// rdmaCQ is a completion queue with its completion channel, armed.
type rdmaCQ interface {
	poll(out []workCompletion) (int, error)
	// wait waits for a completion event and re-arms; errChannelClosed
	// after interrupt.
	wait() error
	interrupt()
	destroy() error
}

// Work-request opcodes (enum ibv_wr_opcode).
type wrOp int

const (
	wrWrite    wrOp = 0
	wrWriteImm wrOp = 1
	wrSend     wrOp = 2
	wrRead     wrOp = 4
)

// workRequest is one send-queue work request with one scatter entry.
type workRequest struct {
	id       uint64
	op       wrOp
	signaled bool
	addr     uint64 // local buffer
	n        uint32
	lkey     uint32
	raddr    uint64 // remote buffer (RDMA operations)
	rkey     uint32
	imm      uint32
}

// rdmaQP is a reliable-connected queue pair.
type rdmaQP interface {
	post(wr workRequest) error
	postRecv(id uint64, addr uint64, n uint32, lkey uint32) error
	// toError moves the queue pair to the error state: every outstanding
	// work request completes with a flush error.
	toError() error
}

// Work-completion statuses (enum ibv_wc_status) and the receive bit of
// enum ibv_wc_opcode.
const (
	wcSuccess        = 0
	wcLocLenErr      = 1
	wcLocQPOpErr     = 2
	wcLocProtErr     = 4
	wcFlushErr       = 5
	wcRemInvReqErr   = 9
	wcRemAccessErr   = 10
	wcRemOpErr       = 11
	wcRetryExcErr    = 12
	wcRNRRetryExcErr = 13
	wcOpRecv         = 1 << 7
	wcOpRecvWriteImm = 1<<7 + 1
	wcOpSend         = 0
	wcOpWrite        = 1
	wcOpRead         = 2
)

var wcStatusNames = [...]string{"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "work request flushed", "memory window bind error", "bad response", "local access error",
	"remote invalid request", "remote access error", "remote operation error", "transport retry counter exceeded",
	"RNR retry counter exceeded", "local RDD violation", "remote invalid RD request", "aborted", "invalid EE context number",
	"invalid EE context state", "fatal error", "response timeout", "general error"}

// workCompletion is one completion.
type workCompletion struct {
	id      uint64
	status  int
	op      int
	byteLen uint32
	imm     uint32
	hasImm  bool
}

func (wc workCompletion) err() error {
	if wc.status == wcSuccess {
		return nil
	}
	return &wcError{status: wc.status}
}

// wcError is a failed work completion.
type wcError struct{ status int }

func (e *wcError) Error() string {
	if e.status >= 0 && e.status < len(wcStatusNames) {
		return "work completion: " + wcStatusNames[e.status]
	}
	return fmt.Sprintf("work completion status %d", e.status)
}

// memlockError turns a registration failure into an error that names the
// locked-memory limit when that is the likely cause (ENOMEM, EPERM or
// EAGAIN from ibv_reg_mr).
func memlockError(what string, n int, err error) error {
	if errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EAGAIN) {
		return fmt.Errorf("%s: registering %d bytes failed: %w: the locked-memory limit is too low "+
			"(raise it: ulimit -l unlimited, LimitMEMLOCK=infinity in systemd, --ulimit memlock=-1 in docker; now %s)",
			what, n, err, memlockNow())
	}
	return fmt.Errorf("%s: registering %d bytes failed: %w", what, n, err)
}

// memlockNow is the soft RLIMIT_MEMLOCK, as text.
func memlockNow() string {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return "unknown"
	}
	if rl.Cur == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return fmt.Sprintf("%d KiB", rl.Cur/1024)
}
