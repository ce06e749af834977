package cufile

/*
#include "cudart.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// DevicePtr is an address in GPU memory. The host cannot dereference it.
type DevicePtr uintptr

// CUDA runtime flag values (driver_types.h).
const (
	cudaHostAllocPortable    = 1
	cudaHostRegisterPortable = 1
	cudaStreamNonBlocking    = 1
	cudaEventDisableTiming   = 2
)

// Device is one GPU of a Runtime. Its methods may be called from any
// goroutine: each runs on a locked OS thread with the device made current.
type Device struct {
	rt       *Runtime
	id       int
	hostNode int // NUMA node AllocPinned prefers, -1 for none (OnHostNode)
}

// ID returns the device ordinal.
func (d *Device) ID() int { return d.id }

// Runtime returns the runtime the device belongs to.
func (d *Device) Runtime() *Runtime { return d.rt }

// Do runs fn with the goroutine locked to its OS thread and this device
// current on that thread (the CUDA runtime keeps the current device per
// thread). Calls for this device made inside fn go to it.
func (d *Device) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.rt.check(C.gd_setDevice(d.rt.f, C.int(d.id)), "cudaSetDevice(%d)", d.id); err != nil {
		return markUnavailable(err)
	}
	return fn()
}

// MemInfo returns the free and total memory of the device in bytes.
func (d *Device) MemInfo() (free, total int64, err error) {
	err = d.Do(func() error {
		var f, t C.size_t
		if err := d.rt.check(C.gd_memGetInfo(d.rt.f, &f, &t), "cudaMemGetInfo on GPU %d", d.id); err != nil {
			return err
		}
		free, total = int64(f), int64(t)
		return nil
	})
	return free, total, err
}

// Malloc allocates n bytes of device memory. Failure to fit matches
// ErrOutOfMemory.
func (d *Device) Malloc(n int64) (DevicePtr, error) {
	var p C.uintptr_t
	err := d.Do(func() error {
		return d.rt.check(C.gd_malloc(d.rt.f, &p, C.size_t(n)), "cudaMalloc(%d bytes) on GPU %d", n, d.id)
	})
	return DevicePtr(p), err
}

// Free releases memory from Malloc. Freeing 0 does nothing.
func (d *Device) Free(p DevicePtr) error {
	return d.Do(func() error {
		return d.rt.check(C.gd_free(d.rt.f, C.uintptr_t(p)), "cudaFree on GPU %d", d.id)
	})
}

// CopyToDevice copies src to device address dst and returns when done.
func (d *Device) CopyToDevice(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.Do(func() error {
		if code := C.gd_memcpyHtoD(d.rt.f, C.uintptr_t(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))); code != cudaSuccess {
			return d.rt.check(code, "cudaMemcpy(%d bytes, host to GPU %d)", len(src), d.id)
		}
		return nil
	})
}

// CopyFromDevice copies len(dst) bytes from device address src into dst
// and returns when done.
func (d *Device) CopyFromDevice(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.Do(func() error {
		if code := C.gd_memcpyDtoH(d.rt.f, unsafe.Pointer(&dst[0]), C.uintptr_t(src), C.size_t(len(dst))); code != cudaSuccess {
			return d.rt.check(code, "cudaMemcpy(%d bytes, GPU %d to host)", len(dst), d.id)
		}
		return nil
	})
}

// PinnedBuffer is page-locked host memory from cudaHostAlloc: the CUDA
// copy engines read it directly, so asynchronous copies overlap with other
// work. It is C memory, so it may be handed to asynchronous copies, which
// Go memory may not.
type PinnedBuffer struct {
	d     *Device
	p     unsafe.Pointer
	n     int
	mu    sync.Mutex
	freed bool
}

// AllocPinned allocates n bytes of pinned host memory usable by every
// device (cudaHostAllocPortable), on the NUMA node OnHostNode chose, if
// any. Failure matches ErrOutOfMemory.
func (d *Device) AllocPinned(n int) (*PinnedBuffer, error) {
	var p unsafe.Pointer
	err := d.Do(func() error {
		if d.hostNode >= 0 {
			// cudaHostAlloc faults its pages in on this thread: under this
			// thread's policy. Memory it maps lazily follows the mapping's
			// policy, set after it returns.
			if preferHostNode(d.hostNode) == nil {
				defer resetHostNode()
			}
		}
		return d.rt.check(C.gd_hostAlloc(d.rt.f, &p, C.size_t(n), cudaHostAllocPortable),
			"cudaHostAlloc(%d bytes) for GPU %d", n, d.id)
	})
	if err == nil && d.hostNode >= 0 {
		_ = bindHostNode(p, n, d.hostNode) // a preference: pinned pages may refuse to move
	}
	if err != nil {
		return nil, err
	}
	return &PinnedBuffer{d: d, p: p, n: n}, nil
}

// Bytes returns the buffer's memory. It is invalid after Free.
func (b *PinnedBuffer) Bytes() []byte { return unsafe.Slice((*byte)(b.p), b.n) }

// Len returns the buffer's size in bytes.
func (b *PinnedBuffer) Len() int { return b.n }

// Free releases the buffer; once it succeeded, later calls do nothing. No
// copy may still be reading or writing it.
func (b *PinnedBuffer) Free() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil
	}
	if err := b.d.rt.check(C.gd_freeHost(b.d.rt.f, b.p), "cudaFreeHost"); err != nil {
		return err
	}
	b.freed = true
	return nil
}

// HostRegistration is host memory pinned in place with cudaHostRegister.
type HostRegistration struct {
	d *Device
	p unsafe.Pointer
}

// RegisterHost page-locks existing host memory so copies from it run
// asynchronously. mem must not be Go heap memory (use mmap'd or C memory):
// the CUDA runtime keeps its address after the call returns.
func (d *Device) RegisterHost(mem []byte) (*HostRegistration, error) {
	if len(mem) == 0 {
		return nil, &CUDAError{Op: "cudaHostRegister(0 bytes)", Code: 1, Msg: "invalid argument"}
	}
	p := unsafe.Pointer(unsafe.SliceData(mem))
	err := d.Do(func() error {
		return d.rt.check(C.gd_hostRegister(d.rt.f, p, C.size_t(len(mem)), cudaHostRegisterPortable),
			"cudaHostRegister(%d bytes) for GPU %d", len(mem), d.id)
	})
	if err != nil {
		return nil, err
	}
	return &HostRegistration{d: d, p: p}, nil
}

// Unregister undoes RegisterHost.
func (h *HostRegistration) Unregister() error {
	return h.d.rt.check(C.gd_hostUnregister(h.d.rt.f, h.p), "cudaHostUnregister")
}
