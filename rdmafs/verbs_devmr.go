//go:build rdma && linux

package rdmafs

// #include "verbs_helpers.h"
import "C"

import (
	"fmt"
	"syscall"
)

// The verbs transport registers GPU memory (see deviceRegistrar).
func (verbsTransport) registersDeviceMemory() {}

var (
	_ deviceTransport = verbsTransport{}
	_ deviceRegistrar = (*verbsClientConn)(nil)
)

// regDmaBuf registers n bytes at offset of dma-buf fd, addressed from iova.
func (e *qpEndpoint) regDmaBuf(fd int, offset uint64, n int64, iova uint64) (*C.struct_ibv_mr, error) {
	var errno C.int
	mr := C.gdl_reg_dmabuf(e.pd, C.uint64_t(offset), C.size_t(n), C.uint64_t(iova), C.int(fd), &errno)
	if mr == nil {
		return nil, fmt.Errorf("ibv_reg_dmabuf_mr of %d bytes at dma-buf offset %d: %w "+
			"(needs Linux 5.12+ and an RDMA driver with dma-buf support, such as mlx5)", n, offset, syscall.Errno(errno))
	}
	return mr, nil
}

// regDevice registers GPU memory [ptr, ptr+n) by its virtual address.
func (e *qpEndpoint) regDevice(ptr uintptr, n int64) (*C.struct_ibv_mr, error) {
	var errno C.int
	mr := C.gdl_reg_addr(e.pd, C.uintptr_t(ptr), C.size_t(n), &errno)
	if mr == nil {
		return nil, fmt.Errorf("ibv_reg_mr of %d bytes of GPU memory at 0x%x: %w "+
			"(is the nvidia-peermem module loaded? modprobe nvidia-peermem)", n, ptr, syscall.Errno(errno))
	}
	return mr, nil
}

// RegisterDmaBuf registers n bytes at offset of dma-buf fd with the queue
// pair's protection domain; the server writes to them from iova.
func (c *verbsClientConn) RegisterDmaBuf(fd int, offset uint64, n int64, iova uint64) (Region, error) {
	return c.registerDevice(iova, n, func() (*C.struct_ibv_mr, error) { return c.ep.regDmaBuf(fd, offset, n, iova) })
}

// RegisterDevicePeer registers GPU memory [ptr, ptr+n) by its address.
func (c *verbsClientConn) RegisterDevicePeer(ptr uintptr, n int64) (Region, error) {
	return c.registerDevice(uint64(ptr), n, func() (*C.struct_ibv_mr, error) { return c.ep.regDevice(ptr, n) })
}

// registerDevice records a GPU memory registration so Deregister and Close
// revoke it. GPU memory is not Go memory: nothing is pinned on the Go side.
func (c *verbsClientConn) registerDevice(addr uint64, n int64, reg func() (*C.struct_ibv_mr, error)) (Region, error) {
	if n <= 0 {
		return Region{}, fmt.Errorf("register %d bytes of GPU memory: the length must be positive", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ep.pd == nil {
		return Region{}, fmt.Errorf("%w: connection closed", ErrRegion)
	}
	mr, err := reg()
	if err != nil {
		return Region{}, err
	}
	r := &clientMR{mr: mr, addr: addr, rkey: mrRkey(mr)}
	c.regs[r.rkey] = r
	return Region{Addr: addr, Len: uint64(n), Key: r.rkey}, nil
}
