package rdmafs

import (
	"fmt"
	"os"
	"sync"
)

// DeviceMemory is what the client needs from the GPU stack to register GPU
// memory as the destination of RDMA writes. rdmafs knows nothing of CUDA:
// the caller implements it (cufile.RDMAMemory does, for one GPU). Methods
// may be called from several goroutines at once.
type DeviceMemory interface {
	// DmaBufFd exports device memory covering [ptr, ptr+n) as a dma-buf
	// (cuMemGetHandleForAddressRange) and returns the file descriptor and
	// the offset of ptr inside the exported buffer. The client closes fd
	// once it no longer needs it. An error means dma-buf is unavailable
	// for this memory (driver, kernel or alignment); the client then tries
	// nvidia-peermem.
	DmaBufFd(ptr uintptr, n int64) (fd int, offset uint64, err error)
	// SyncMemops prepares the allocation holding ptr for registration by
	// its virtual address through nvidia-peermem
	// (cuPointerSetAttribute SYNC_MEMOPS).
	SyncMemops(ptr uintptr) error
	// FlushRDMAWrites makes RDMA writes that have completed visible to
	// later work on the GPU (cudaDeviceFlushGPUDirectRDMAWrites). The
	// client calls it after the last write of a read completed and before
	// the read returns.
	FlushRDMAWrites() error
}

// How device memory was registered for RDMA; see DeviceRegistration.
const (
	// RegDmaBuf: exported as a dma-buf and registered with
	// ibv_reg_dmabuf_mr (Linux 5.12+, rdma-core 34+, CUDA 11.7+ with the
	// open NVIDIA kernel modules).
	RegDmaBuf = "dma-buf"
	// RegPeermem: registered by its GPU virtual address with ibv_reg_mr,
	// which only works with the nvidia-peermem kernel module loaded.
	RegPeermem = "nvidia-peermem"
)

// DeviceRegistration reports how the client registered GPU memory for the
// most recent ReadAtDevice that got as far as registering it.
type DeviceRegistration struct {
	// Method is RegDmaBuf, RegPeermem, or "" when neither worked (or no
	// device read has registered memory yet).
	Method string
	// Reason says why: which method worked and why the preferred one was
	// refused, or both causes when neither worked.
	Reason string
}

// deviceRegistrar is implemented by client-side connections of transports
// that can register GPU memory (verbs). Regions it returns are revoked
// with Deregister, like those of Register.
type deviceRegistrar interface {
	RegionRegistrar
	// RegisterDmaBuf registers n bytes at offset of the dma-buf fd for
	// remote writes; the peer addresses them from iova.
	RegisterDmaBuf(fd int, offset uint64, n int64, iova uint64) (Region, error)
	// RegisterDevicePeer registers GPU memory [ptr, ptr+n) by its virtual
	// address (nvidia-peermem).
	RegisterDevicePeer(ptr uintptr, n int64) (Region, error)
}

// deviceTransport is implemented by transports whose client connections
// implement deviceRegistrar.
type deviceTransport interface {
	Transport
	registersDeviceMemory()
}

// deviceTarget is the GPU destination of one ReadAtDevice. The first
// piece to register chooses the method (dma-buf, else nvidia-peermem) for
// the whole read; the other pieces register the same way on their own
// connections (each connection is its own protection domain).
type deviceTarget struct {
	dm  DeviceMemory
	ptr uintptr
	n   int64

	mu     sync.Mutex
	chosen bool
	reg    DeviceRegistration
	err    error // set when neither method worked
	fd     int   // the dma-buf, -1 if none
	fdOff  uint64
}

func newDeviceTarget(dm DeviceMemory, ptr uintptr, n int64) *deviceTarget {
	return &deviceTarget{dm: dm, ptr: ptr, n: n, fd: -1}
}

// register registers bytes [lo, hi) of the target with conn.
func (t *deviceTarget) register(conn deviceRegistrar, lo, hi int64) (Region, error) {
	t.mu.Lock()
	if !t.chosen {
		defer t.mu.Unlock()
		t.chosen = true
		return t.choose(conn, lo, hi)
	}
	method, fd, fdOff, err := t.reg.Method, t.fd, t.fdOff, t.err
	t.mu.Unlock()
	if err != nil {
		return Region{}, err
	}
	var r Region
	if method == RegDmaBuf {
		r, err = conn.RegisterDmaBuf(fd, fdOff+uint64(lo), hi-lo, uint64(t.ptr)+uint64(lo))
	} else {
		r, err = conn.RegisterDevicePeer(t.ptr+uintptr(lo), hi-lo)
	}
	if err != nil {
		return Region{}, fmt.Errorf("%w: register GPU memory [0x%x, +%d) with %s: %v",
			ErrNoGPUDirect, t.ptr+uintptr(lo), hi-lo, method, err)
	}
	return r, nil
}

// choose tries dma-buf, then nvidia-peermem, registering [lo, hi) with
// conn, and records the outcome. The caller holds t.mu.
func (t *deviceTarget) choose(conn deviceRegistrar, lo, hi int64) (Region, error) {
	var dmaErr, peerErr error
	fd, off, err := t.dm.DmaBufFd(t.ptr, t.n)
	if err != nil {
		dmaErr = fmt.Errorf("export failed: %v", err)
	} else {
		r, err := conn.RegisterDmaBuf(fd, off+uint64(lo), hi-lo, uint64(t.ptr)+uint64(lo))
		if err == nil {
			t.fd, t.fdOff = fd, off
			t.reg = DeviceRegistration{Method: RegDmaBuf,
				Reason: "the GPU driver exported the memory as a dma-buf and the RDMA device registered it"}
			return r, nil
		}
		closeFd(fd)
		dmaErr = fmt.Errorf("exported, but the RDMA device refused it: %v", err)
	}
	if err := t.dm.SyncMemops(t.ptr); err != nil {
		peerErr = fmt.Errorf("SYNC_MEMOPS failed: %v", err)
	} else {
		r, err := conn.RegisterDevicePeer(t.ptr+uintptr(lo), hi-lo)
		if err == nil {
			t.reg = DeviceRegistration{Method: RegPeermem, Reason: "dma-buf unavailable (" + dmaErr.Error() + ")"}
			return r, nil
		}
		peerErr = err
	}
	t.reg = DeviceRegistration{Reason: fmt.Sprintf("dma-buf: %v; nvidia-peermem: %v", dmaErr, peerErr)}
	t.err = fmt.Errorf("%w: GPU memory [0x%x, +%d) could not be registered for RDMA: %s; "+
		"use a kernel and driver with dma-buf support or load nvidia-peermem, or read into pinned host memory and copy (the bounce path)",
		ErrNoGPUDirect, t.ptr, t.n, t.reg.Reason)
	return Region{}, t.err
}

// outcome returns the registration outcome, and whether a method was used
// (so that writes may have landed and a flush is due).
func (t *deviceTarget) outcome() (DeviceRegistration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reg, t.chosen
}

// close releases the dma-buf once every registration made from it is gone.
func (t *deviceTarget) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fd >= 0 {
		closeFd(t.fd)
		t.fd = -1
	}
}

func closeFd(fd int) { os.NewFile(uintptr(fd), "dma-buf").Close() }
