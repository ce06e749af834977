package ibv

/*
#include <stdlib.h>
#include "lib.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Access flags for memory registration (enum ibv_access_flags).
const (
	AccessLocalWrite      = C.GDV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite     = C.GDV_ACCESS_REMOTE_WRITE
	AccessRemoteRead      = C.GDV_ACCESS_REMOTE_READ
	AccessRelaxedOrdering = C.GDV_ACCESS_RELAXED_ORDERING
)

// Work-request opcodes (enum ibv_wr_opcode) and work-completion statuses
// and opcodes (enum ibv_wc_status, enum ibv_wc_opcode).
const (
	OpWrite        = C.GDV_WR_RDMA_WRITE
	OpWriteWithImm = C.GDV_WR_RDMA_WRITE_WITH_IMM
	OpSend         = C.GDV_WR_SEND
	OpRead         = C.GDV_WR_RDMA_READ

	StatusSuccess   = C.GDV_WC_SUCCESS
	StatusFlushErr  = C.GDV_WC_WR_FLUSH_ERR
	StatusRemAccess = C.GDV_WC_REM_ACCESS_ERR

	WCSend         = C.GDV_WC_SEND
	WCWrite        = C.GDV_WC_RDMA_WRITE
	WCRecv         = C.GDV_WC_RECV
	WCRecvWriteImm = C.GDV_WC_RECV_RDMA_WITH_IMM
	wcFlagWithImm  = C.GDV_WC_WITH_IMM
)

// Context is an open device (struct ibv_context), owned by librdmacm or by
// whoever opened it.
type Context struct {
	l *Lib
	c *C.struct_gdv_context
}

func wrapContext(l *Lib, c *C.struct_gdv_context) *Context {
	if c == nil {
		return nil
	}
	return &Context{l: l, c: c}
}

// Key identifies the device context: identifiers bound to the same device
// report the same key.
func (ctx *Context) Key() uintptr { return uintptr(unsafe.Pointer(ctx.c)) }

// Name is the device's name ("mlx5_0", "rxe0").
func (ctx *Context) Name() string {
	return C.GoString(C.gdv_get_device_name(ctx.l.c, ctx.c.device))
}

// Contexts returns librdmacm's open contexts, one per RDMA device
// (rdma_get_devices); they stay open while the library is loaded.
func (l *Lib) Contexts() ([]*Context, error) {
	var n C.int
	list, err := C.gdv_get_devices(l.c, &n)
	if list == nil {
		return nil, fmt.Errorf("rdma_get_devices: %w", errnoOr(err, syscall.ENODEV))
	}
	defer C.gdv_free_devices(l.c, list)
	out := make([]*Context, 0, int(n))
	for _, c := range unsafe.Slice(list, int(n)) {
		out = append(out, wrapContext(l, c))
	}
	return out, nil
}

// PD is a protection domain.
type PD struct {
	l *Lib
	c *C.struct_gdv_pd
}

// AllocPD allocates a protection domain on the device.
func (ctx *Context) AllocPD() (*PD, error) {
	c, err := C.gdv_alloc_pd(ctx.l.c, ctx.c)
	if c == nil {
		return nil, fmt.Errorf("ibv_alloc_pd on %s: %w", ctx.Name(), errnoOr(err, syscall.ENOMEM))
	}
	return &PD{l: ctx.l, c: c}, nil
}

// Dealloc frees the protection domain; it fails (EBUSY) while memory
// regions or queue pairs use it.
func (pd *PD) Dealloc() error {
	if err := rcErr(C.gdv_dealloc_pd(pd.l.c, pd.c)); err != nil {
		return fmt.Errorf("ibv_dealloc_pd: %w", err)
	}
	return nil
}

// MR is a registered memory region.
type MR struct {
	l *Lib
	c *C.struct_gdv_mr
}

// RegMR registers [addr, addr+n) with access (ibv_reg_mr, or
// ibv_reg_mr_iova2 when access holds relaxed ordering). The caller keeps
// the memory alive and unmoved until Dereg succeeds.
func (pd *PD) RegMR(addr uintptr, n int, access int) (*MR, error) {
	c, err := C.gdv_reg_mr(pd.l.c, pd.c, C.uintptr_t(addr), C.size_t(n), C.int(access))
	if c == nil {
		return nil, errnoOr(err, syscall.ENOMEM)
	}
	return &MR{l: pd.l, c: c}, nil
}

// ErrNoDmaBuf: this libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34).
var ErrNoDmaBuf = errors.New("libibverbs has no ibv_reg_dmabuf_mr (IBVERBS_1.12, rdma-core 34 or newer)")

// RegDmaBuf registers n bytes at offset of dma-buf fd, addressed from iova
// (ibv_reg_dmabuf_mr).
func (pd *PD) RegDmaBuf(fd int, offset uint64, n int, iova uint64, access int) (*MR, error) {
	if !pd.l.HasDmaBuf() {
		return nil, ErrNoDmaBuf
	}
	c, err := C.gdv_reg_dmabuf_mr(pd.l.c, pd.c, C.uint64_t(offset), C.size_t(n), C.uint64_t(iova), C.int(fd), C.int(access))
	if c == nil {
		return nil, errnoOr(err, syscall.EOPNOTSUPP)
	}
	return &MR{l: pd.l, c: c}, nil
}

// LKey and RKey are the region's keys.
func (mr *MR) LKey() uint32 { return uint32(mr.c.lkey) }

// RKey is the key a peer uses to access the region.
func (mr *MR) RKey() uint32 { return uint32(mr.c.rkey) }

// Dereg deregisters the region (ibv_dereg_mr). Until it succeeds the device
// may still access the memory.
func (mr *MR) Dereg() error {
	if err := rcErr(C.gdv_dereg_mr(mr.l.c, mr.c)); err != nil {
		return fmt.Errorf("ibv_dereg_mr: %w", err)
	}
	return nil
}

// CQ is a completion queue with its own completion channel.
type CQ struct {
	l    *Lib
	c    *C.struct_gdv_cq
	ch   *C.struct_gdv_comp_channel
	wait *waiter
}

// CreateCQ creates a completion queue of at least entries entries, with a
// completion channel, armed.
func (ctx *Context) CreateCQ(entries int) (*CQ, error) {
	ch, err := C.gdv_create_comp_channel(ctx.l.c, ctx.c)
	if ch == nil {
		return nil, fmt.Errorf("ibv_create_comp_channel on %s: %w", ctx.Name(), errnoOr(err, syscall.ENOMEM))
	}
	c, err := C.gdv_create_cq(ctx.l.c, ctx.c, C.int(entries), ch)
	if c == nil {
		C.gdv_destroy_comp_channel(ctx.l.c, ch)
		return nil, fmt.Errorf("ibv_create_cq of %d entries on %s: %w", entries, ctx.Name(), errnoOr(err, syscall.ENOMEM))
	}
	w, err := newWaiter(int(ch.fd), "completion channel")
	if err == nil {
		err = rcErr(C.gdv_req_notify_cq(c))
	}
	if err != nil {
		if w != nil {
			w.close()
		}
		C.gdv_destroy_cq(ctx.l.c, c)
		C.gdv_destroy_comp_channel(ctx.l.c, ch)
		return nil, err
	}
	return &CQ{l: ctx.l, c: c, ch: ch, wait: w}, nil
}

// WC is a work completion.
type WC struct {
	ID      uint64
	Status  int
	Opcode  int
	ByteLen uint32
	Imm     uint32 // host byte order
	HasImm  bool
}

// Poll returns up to len(out) completions without blocking.
func (cq *CQ) Poll(out []WC) (int, error) {
	var wc [16]C.struct_gdv_wc
	n := min(len(out), len(wc))
	got := C.gdv_poll_cq(cq.c, C.int(n), &wc[0])
	if got < 0 {
		return 0, fmt.Errorf("ibv_poll_cq: %w", syscall.Errno(-got))
	}
	for i := range int(got) {
		w := &wc[i]
		out[i] = WC{ID: uint64(w.wr_id), Status: int(w.status), Opcode: int(w.opcode), ByteLen: uint32(w.byte_len)}
		if w.wc_flags&wcFlagWithImm != 0 {
			imm := *(*uint32)(unsafe.Pointer(&w.anon0[0]))
			out[i].Imm, out[i].HasImm = ntohl(imm), true
		}
	}
	return int(got), nil
}

func ntohl(v uint32) uint32 { return v>>24 | v>>8&0xff00 | v<<8&0xff0000 | v<<24 }

// Wait waits for a completion event, acknowledges it and re-arms the CQ;
// the caller then polls until the queue is empty. It returns ErrClosed
// once Interrupt was called.
func (cq *CQ) Wait() error {
	return cq.wait.do(func() (bool, error) {
		rc, err := C.gdv_cq_event(cq.l.c, cq.ch)
		if rc == 0 {
			return true, nil
		}
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			return false, nil
		}
		if rc > 0 {
			return true, fmt.Errorf("ibv_req_notify_cq: %w", syscall.Errno(rc))
		}
		return true, fmt.Errorf("ibv_get_cq_event: %w", errnoOr(err, syscall.EIO))
	})
}

// Interrupt makes a waiting Wait, and every later one, return ErrClosed.
func (cq *CQ) Interrupt() { cq.wait.close() }

// Destroy destroys the CQ and its channel; queue pairs using it must be
// gone.
func (cq *CQ) Destroy() error {
	cq.wait.close()
	if err := rcErr(C.gdv_destroy_cq(cq.l.c, cq.c)); err != nil {
		return fmt.Errorf("ibv_destroy_cq: %w", err)
	}
	if err := rcErr(C.gdv_destroy_comp_channel(cq.l.c, cq.ch)); err != nil {
		return fmt.Errorf("ibv_destroy_comp_channel: %w", err)
	}
	return nil
}

// QP is an RC queue pair created through rdma_cm.
type QP struct {
	l *Lib
	c *C.struct_gdv_qp
}

// Post posts one work request: opcode OpWrite, OpWriteWithImm, OpSend or
// OpRead; [addr, addr+n) under lkey is the local buffer; raddr and rkey
// the remote one (RDMA operations); imm the immediate (host byte order).
func (qp *QP) Post(wrID uint64, opcode int, signaled bool, addr uint64, n uint32, lkey uint32, raddr uint64, rkey uint32, imm uint32) error {
	sig := C.int(0)
	if signaled {
		sig = 1
	}
	if err := rcErr(C.gdv_post_send(qp.c, C.uint64_t(wrID), C.int(opcode), sig, C.uint64_t(addr), C.uint32_t(n),
		C.uint32_t(lkey), C.uint64_t(raddr), C.uint32_t(rkey), C.uint32_t(ntohl(imm)))); err != nil {
		return fmt.Errorf("ibv_post_send: %w", err)
	}
	return nil
}

// PostRecv posts one receive of up to n bytes into [addr, addr+n).
func (qp *QP) PostRecv(wrID uint64, addr uint64, n uint32, lkey uint32) error {
	if err := rcErr(C.gdv_post_recv(qp.c, C.uint64_t(wrID), C.uint64_t(addr), C.uint32_t(n), C.uint32_t(lkey))); err != nil {
		return fmt.Errorf("ibv_post_recv: %w", err)
	}
	return nil
}

// ToError moves the queue pair to the error state (ibv_modify_qp): every
// outstanding work request then completes with a flush error.
func (qp *QP) ToError() error {
	if err := rcErr(C.gdv_qp_to_error(qp.l.c, qp.c)); err != nil {
		return fmt.Errorf("ibv_modify_qp to ERR: %w", err)
	}
	return nil
}
