package cufile

/*
#include "cufileapi.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// FileHandle is a file descriptor registered with cuFile. Release it with
// Close before the driver's last Close. Reads may run concurrently.
type FileHandle struct {
	d    *Driver
	h    C.uintptr_t
	fd   int
	once sync.Once
}

// RegisterFile registers fd (CU_FILE_HANDLE_TYPE_OPAQUE_FD) with the open
// driver. fd must be opened with O_DIRECT, which cuFile needs for its fast
// path; the error says so otherwise.
func (d *Driver) RegisterFile(fd int) (*FileHandle, error) {
	op := fmt.Sprintf("cuFileHandleRegister(fd %d)", fd)
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if fl&unix.O_DIRECT == 0 {
		return nil, &OpError{Op: op, Code: CuFileDIONotSet}
	}
	var h C.uintptr_t
	if err := status(C.gd_cfHandleRegister(d.c.f, &h, C.int(fd)), op); err != nil {
		return nil, err
	}
	return &FileHandle{d: d, h: h, fd: fd}, nil
}

// Fd returns the registered descriptor.
func (h *FileHandle) Fd() int { return h.fd }

// Read reads up to n bytes at file offset fileOff into device memory at
// dst+dstOff with one cuFileRead and returns the count, which may be short
// (end of file, or a partial transfer: call again for the rest). dst must
// be the base of an allocation (or of a registered buffer). Errors are an
// errno (a syscall.Errno) or an *OpError.
func (h *FileHandle) Read(dst DevicePtr, n, fileOff, dstOff int64) (int64, error) {
	r, errno := C.gd_cfRead(h.d.c.f, h.h, C.uintptr_t(dst), C.size_t(n), C.int64_t(fileOff), C.int64_t(dstOff))
	return ioResult("cuFileRead", int64(r), errno, n, fileOff)
}

// Write writes n bytes of device memory at src+srcOff to file offset
// fileOff with one cuFileWrite and returns the count.
func (h *FileHandle) Write(src DevicePtr, n, fileOff, srcOff int64) (int64, error) {
	r, errno := C.gd_cfWrite(h.d.c.f, h.h, C.uintptr_t(src), C.size_t(n), C.int64_t(fileOff), C.int64_t(srcOff))
	return ioResult("cuFileWrite", int64(r), errno, n, fileOff)
}

// ioResult decodes cuFileRead/cuFileWrite's return: bytes >= 0, -1 with
// errno, or -CUfileOpError (older libraries also return -errno).
func ioResult(op string, r int64, errno error, n, off int64) (int64, error) {
	if r >= 0 {
		return r, nil
	}
	op = fmt.Sprintf("%s(%d bytes at file offset %d)", op, n, off)
	switch {
	case r == -1:
		if errno == nil || errno == syscall.Errno(0) {
			errno = syscall.EIO
		}
		return 0, fmt.Errorf("%s: %w", op, errno)
	case isCuFileCode(int(-r)):
		return 0, &OpError{Op: op, Code: int(-r)}
	default:
		return 0, fmt.Errorf("%s: %w", op, syscall.Errno(-r))
	}
}

// Close deregisters the handle; later calls do nothing.
func (h *FileHandle) Close() {
	h.once.Do(func() { C.gd_cfHandleDeregister(h.d.c.f, h.h) })
}

// RegisterBuffer registers device memory [p, p+n) with cuFile
// (cuFileBufRegister), which pins it in the GPU's BAR once instead of per
// read. It pays for large buffers read many times.
func (d *Driver) RegisterBuffer(p DevicePtr, n int64) error {
	return status(C.gd_cfBufRegister(d.c.f, C.uintptr_t(p), C.size_t(n)),
		fmt.Sprintf("cuFileBufRegister(%d bytes)", n))
}

// DeregisterBuffer undoes RegisterBuffer for the buffer starting at p.
func (d *Driver) DeregisterBuffer(p DevicePtr) error {
	return status(C.gd_cfBufDeregister(d.c.f, C.uintptr_t(p)), "cuFileBufDeregister")
}
