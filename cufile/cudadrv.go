package cufile

/*
#cgo LDFLAGS: -ldl
#include "dlsym.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// The CUDA driver API subset gdsload needs for RDMA registration of GPU
// memory. CUdeviceptr is unsigned long long on 64-bit platforms.
typedef struct {
	int (*init)(unsigned);
	int (*driverGetVersion)(int *);
	int (*getErrorString)(int, const char **);
	int (*memGetHandleForAddressRange)(void *, unsigned long long, size_t, int, unsigned long long);
	int (*pointerSetAttribute)(const void *, int, unsigned long long);
} gd_cuda;


static const char *gd_cuda_load(void *h, gd_cuda *f) {
	GD_SYM(h, f, init, "cuInit")
	GD_SYM(h, f, driverGetVersion, "cuDriverGetVersion")
	GD_SYM(h, f, getErrorString, "cuGetErrorString")
	GD_SYM(h, f, memGetHandleForAddressRange, "cuMemGetHandleForAddressRange")
	GD_SYM(h, f, pointerSetAttribute, "cuPointerSetAttribute")
	return NULL;
}

static int gd_cuInit(gd_cuda *f) { return f->init(0); }
static int gd_cuDriverGetVersion(gd_cuda *f, int *v) { return f->driverGetVersion(v); }
static const char *gd_cuGetErrorString(gd_cuda *f, int e) {
	const char *s = NULL;
	if (f->getErrorString(e, &s) != 0) return NULL;
	return s;
}
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1
static int gd_cuDmaBufFd(gd_cuda *f, int *fd, uintptr_t p, size_t n) {
	return f->memGetHandleForAddressRange(fd, (unsigned long long)p, n, 1, 0);
}
// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6
static int gd_cuSyncMemops(gd_cuda *f, uintptr_t p) {
	unsigned int one = 1;
	return f->pointerSetAttribute(&one, 6, (unsigned long long)p);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// CUDADriver is a loaded CUDA driver API library (libcuda.so.1), for the
// few calls RDMA registration of GPU memory needs. It is safe for
// concurrent use and never unloaded.
type CUDADriver struct {
	f   *C.gd_cuda // C memory
	lib Library
}

// OpenCUDADriver loads libcuda (see Config). Failure matches
// ErrUnavailable. It does not call cuInit.
func OpenCUDADriver(cfg Config) (*CUDADriver, error) {
	spec := specCUDA
	spec.explicit = cfg.CUDA
	l, err := cfg.open(spec)
	if err != nil {
		return nil, err
	}
	f := (*C.gd_cuda)(C.calloc(1, C.sizeof_gd_cuda))
	if missing := C.gd_cuda_load(l.Handle, f); missing != nil {
		C.free(unsafe.Pointer(f))
		return nil, spec.lacks(l.Path, C.GoString(missing))
	}
	d := &CUDADriver{f: f, lib: Library{Name: spec.name, Found: true, Path: l.Path}}
	d.lib.Version = libraryVersion(l.Path, func() (string, error) {
		var v C.int
		if code := C.gd_cuDriverGetVersion(f, &v); code != 0 {
			return "", d.check(code, "cuDriverGetVersion")
		}
		return formatCUDAVersion(int(v)), nil
	})
	return d, nil
}

// Library reports what was loaded.
func (d *CUDADriver) Library() Library { return d.lib }

func (d *CUDADriver) check(code C.int, op string) error {
	if code == 0 {
		return nil
	}
	msg := "unknown error"
	if s := C.gd_cuGetErrorString(d.f, code); s != nil {
		msg = C.GoString(s)
	}
	return &DriverAPIError{Op: op, Code: int(code), Msg: msg}
}

// Init calls cuInit(0). It is cheap after the first call. Failure without
// a GPU matches ErrUnavailable.
func (d *CUDADriver) Init() error {
	return d.check(C.gd_cuInit(d.f), "cuInit")
}

// DmaBufFd exports device memory [p, p+n) as a dma-buf file descriptor
// (cuMemGetHandleForAddressRange), for ibv_reg_dmabuf_mr. The caller owns
// and closes the descriptor. p and n should be aligned to the GPU page
// size (64 KiB is safe).
func (d *CUDADriver) DmaBufFd(p DevicePtr, n int64) (int, error) {
	var fd C.int
	if err := d.check(C.gd_cuDmaBufFd(d.f, &fd, C.uintptr_t(p), C.size_t(n)),
		fmt.Sprintf("cuMemGetHandleForAddressRange(%d bytes, dma-buf)", n)); err != nil {
		return -1, err
	}
	return int(fd), nil
}

// SetSyncMemops sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the allocation
// holding p, so memory operations on it synchronize: required before peers
// (NICs) write into it through RDMA.
func (d *CUDADriver) SetSyncMemops(p DevicePtr) error {
	return d.check(C.gd_cuSyncMemops(d.f, C.uintptr_t(p)), "cuPointerSetAttribute(SYNC_MEMOPS)")
}
