//go:build rdma && linux

package rdmafs

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include "verbs_helpers.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// verbsErr turns a negative errno from a helper into an error.
func verbsErr(what string, rc C.int) error {
	if rc >= 1000 {
		return fmt.Errorf("%s: work completion status %d", what, int(rc)-1000)
	}
	return fmt.Errorf("%s: %w", what, syscall.Errno(-rc))
}

// rdmaDeviceCount reports how many RDMA devices the machine has.
func rdmaDeviceCount() (int, error) {
	n := C.gdl_device_count()
	if n < 0 {
		return 0, verbsErr("ibv_get_device_list", n)
	}
	return int(n), nil
}

// qpEndpoint is one RC queue pair with its PD and CQ.
type qpEndpoint struct {
	ch *C.struct_rdma_event_channel // owned only by clients
	id *C.struct_rdma_cm_id
	pd *C.struct_ibv_pd
	cq *C.struct_ibv_cq
}

func (e *qpEndpoint) close() {
	if e.id != nil {
		C.rdma_disconnect(e.id)
		if e.id.qp != nil {
			C.rdma_destroy_qp(e.id)
		}
	}
	if e.cq != nil {
		C.ibv_destroy_cq(e.cq)
	}
	if e.pd != nil {
		C.ibv_dealloc_pd(e.pd)
	}
	if e.id != nil {
		C.rdma_destroy_id(e.id)
	}
	if e.ch != nil {
		C.rdma_destroy_event_channel(e.ch)
	}
	*e = qpEndpoint{}
}

// regMR registers p for local and remote write access.
func (e *qpEndpoint) regMR(p []byte) (*C.struct_ibv_mr, error) {
	mr := C.ibv_reg_mr(e.pd, unsafe.Pointer(&p[0]), C.size_t(len(p)),
		C.IBV_ACCESS_LOCAL_WRITE|C.IBV_ACCESS_REMOTE_WRITE)
	if mr == nil {
		return nil, fmt.Errorf("ibv_reg_mr of %d bytes failed (locked-memory limit? raise ulimit -l)", len(p))
	}
	return mr, nil
}

func deregMR(mr *C.struct_ibv_mr) { C.ibv_dereg_mr(mr) }

// write posts an RDMA WRITE of p (inside mr) to raddr/rkey and waits for
// its completion.
func (e *qpEndpoint) write(mr *C.struct_ibv_mr, p []byte, raddr uint64, rkey uint32, timeoutMs int) error {
	rc := C.gdl_rdma_write(e.id.qp, e.cq, unsafe.Pointer(&p[0]), C.uint32_t(len(p)), C.gdl_mr_lkey(mr),
		C.uint64_t(raddr), C.uint32_t(rkey), C.int(timeoutMs))
	if rc != 0 {
		return verbsErr("RDMA WRITE", rc)
	}
	return nil
}

func mrRkey(mr *C.struct_ibv_mr) uint32 { return uint32(C.gdl_mr_rkey(mr)) }
