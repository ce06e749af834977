package cufile

/*
#include "cudart.h"
*/
import "C"

import (
	"fmt"
	"os"
)

// cudaDeviceFlushGPUDirectRDMAWrites arguments (driver_types.h, CUDA 11.3+).
const (
	cudaFlushGPUDirectRDMAWritesTargetCurrentDevice = 0
	cudaFlushGPUDirectRDMAWritesToOwner             = 100
)

// FlushGPUDirectRDMAWrites blocks until the RDMA writes a NIC has completed
// into this device's memory are visible to work on this device
// (cudaDeviceFlushGPUDirectRDMAWrites with the current-device target and
// the owner scope). Call it after the RDMA completions and before a kernel
// or copy on this device reads the data: a completion only says the NIC
// handed the writes to PCIe, and on GPUs without ordered GPUDirect RDMA
// writes they may not yet be visible to the GPU.
//
// The function is optional in libcudart (CUDA 11.3 and newer). When the
// loaded library lacks it the error matches ErrUnavailable and names the
// library; use a newer CUDA runtime, or copy through pinned host memory.
func (d *Device) FlushGPUDirectRDMAWrites() error {
	if C.gd_hasFlushGPUDirectRDMAWrites(d.rt.f) == 0 {
		return fmt.Errorf("flush GPUDirect RDMA writes on GPU %d (needs CUDA 11.3 or newer): %w", d.id,
			specCUDART.lacks(d.rt.lib.Path, "cudaDeviceFlushGPUDirectRDMAWrites"))
	}
	return d.Do(func() error {
		return d.rt.check(C.gd_flushGPUDirectRDMAWrites(d.rt.f,
			cudaFlushGPUDirectRDMAWritesTargetCurrentDevice, cudaFlushGPUDirectRDMAWritesToOwner),
			"cudaDeviceFlushGPUDirectRDMAWrites(current device, to owner) on GPU %d", d.id)
	})
}

// RDMAMemory lets an RDMA client register memory of one GPU as the
// destination of remote writes. Its methods are those of
// rdmafs.DeviceMemory (cufile does not import rdmafs: the method set
// matches): DmaBufFd for ibv_reg_dmabuf_mr, SyncMemops for the
// nvidia-peermem path, FlushRDMAWrites after the writes completed. Every
// call runs with the device current on a locked OS thread. It is safe for
// concurrent use.
type RDMAMemory struct {
	drv *CUDADriver
	dev *Device
}

// NewRDMAMemory initialises the driver API (cuInit) and returns an
// RDMAMemory for dev. The error matches ErrUnavailable when the driver
// finds no GPU.
func NewRDMAMemory(drv *CUDADriver, dev *Device) (*RDMAMemory, error) {
	if err := drv.Init(); err != nil {
		return nil, err
	}
	return &RDMAMemory{drv: drv, dev: dev}, nil
}

// DmaBufFd exports the host-page-aligned range that covers device memory
// [ptr, ptr+n) as a dma-buf (cuMemGetHandleForAddressRange) and returns its
// file descriptor and the offset of ptr inside it. The caller owns fd and
// closes it once every registration made from it is gone. It fails where
// the driver or kernel cannot export dma-bufs (CUDA 11.7+, an open NVIDIA
// kernel module, Linux 5.12+), or when the aligned range leaves the
// allocation; the peermem path is the fallback then.
func (m *RDMAMemory) DmaBufFd(ptr uintptr, n int64) (fd int, offset uint64, err error) {
	if n <= 0 {
		return -1, 0, fmt.Errorf("dma-buf export of %d bytes at 0x%x: the length must be positive", n, ptr)
	}
	page := uintptr(os.Getpagesize())
	base := ptr &^ (page - 1)
	size := (ptr - base + uintptr(n) + page - 1) &^ (page - 1)
	err = m.dev.Do(func() error {
		var e error
		fd, e = m.drv.DmaBufFd(DevicePtr(base), int64(size))
		return e
	})
	if err != nil {
		return -1, 0, err
	}
	return fd, uint64(ptr - base), nil
}

// SyncMemops sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the allocation that
// holds ptr, which GPUDirect RDMA through nvidia-peermem requires before
// the NIC registers the memory.
func (m *RDMAMemory) SyncMemops(ptr uintptr) error {
	return m.dev.Do(func() error { return m.drv.SetSyncMemops(DevicePtr(ptr)) })
}

// FlushRDMAWrites is the device's FlushGPUDirectRDMAWrites.
func (m *RDMAMemory) FlushRDMAWrites() error { return m.dev.FlushGPUDirectRDMAWrites() }
