package cufile

/*
#include "cudart.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Runtime is a loaded CUDA runtime library (libcudart). It is safe for
// concurrent use; it is never unloaded.
type Runtime struct {
	f   *C.gd_cudart // C memory: its function pointers are C pointers
	lib Library
}

// OpenRuntime loads libcudart (see Config for where it looks). It fails
// with an error matching ErrUnavailable when the library is missing or
// lacks a function gdsload calls. It does not touch a GPU.
func OpenRuntime(cfg Config) (*Runtime, error) {
	spec := specCUDART
	spec.explicit = cfg.CUDART
	l, err := cfg.open(spec)
	if err != nil {
		return nil, err
	}
	f := (*C.gd_cudart)(C.calloc(1, C.sizeof_gd_cudart))
	if missing := C.gd_cudart_load(l.Handle, f); missing != nil {
		C.free(unsafe.Pointer(f))
		return nil, spec.lacks(l.Path, C.GoString(missing))
	}
	r := &Runtime{f: f, lib: Library{Name: spec.name, Found: true, Path: l.Path}}
	r.lib.Version = libraryVersion(l.Path, func() (string, error) {
		v, err := r.RuntimeVersion()
		return formatCUDAVersion(v), err
	})
	return r, nil
}

// Library reports what was loaded.
func (r *Runtime) Library() Library { return r.lib }

// check turns a cudaError_t into nil or a *CUDAError for op. Calls on a
// per-chunk path test for cudaSuccess first: the arguments of op are boxed
// at the call, success or not.
func (r *Runtime) check(code C.int, op string, args ...any) error {
	if code == cudaSuccess {
		return nil
	}
	if len(args) > 0 {
		op = fmt.Sprintf(op, args...)
	}
	return &CUDAError{Op: op, Code: int(code), Msg: r.ErrorString(int(code))}
}

// ErrorString returns cudaGetErrorString's text for a cudaError_t.
func (r *Runtime) ErrorString(code int) string {
	s := C.gd_getErrorString(r.f, C.int(code))
	if s == nil {
		return "unknown error"
	}
	return C.GoString(s)
}

// DeviceCount returns the number of GPUs the runtime sees. No GPU is not
// an error: it returns 0 and an error matching ErrUnavailable that says why
// (no device, driver too old, ...).
func (r *Runtime) DeviceCount() (int, error) {
	var n C.int
	if err := r.check(C.gd_getDeviceCount(r.f, &n), "cudaGetDeviceCount"); err != nil {
		var ce *CUDAError
		if errors.As(err, &ce) && ce.Code == cudaErrorInsufficientDriver {
			// "Driver too old" is also what the runtime says when there
			// is no driver at all; a driver version of 0 tells them apart.
			if v, verr := r.DriverVersion(); verr == nil && v == 0 {
				err = &noDriverError{ce}
			}
		}
		return 0, markUnavailable(err)
	}
	return int(n), nil
}

// noDriverError is cudaErrorInsufficientDriver on a machine with no NVIDIA
// driver installed, said as such.
type noDriverError struct{ err *CUDAError }

func (e *noDriverError) Error() string {
	return fmt.Sprintf("no NVIDIA driver installed (%s: cudaErrorInsufficientDriver, driver version 0)", e.err.Op)
}

func (e *noDriverError) Unwrap() error { return e.err }

// DriverVersion returns cudaDriverGetVersion's value (1000*major+10*minor);
// 0 means no driver is installed.
func (r *Runtime) DriverVersion() (int, error) {
	var v C.int
	err := r.check(C.gd_driverGetVersion(r.f, &v), "cudaDriverGetVersion")
	return int(v), err
}

// RuntimeVersion returns cudaRuntimeGetVersion's value.
func (r *Runtime) RuntimeVersion() (int, error) {
	var v C.int
	err := r.check(C.gd_runtimeGetVersion(r.f, &v), "cudaRuntimeGetVersion")
	return int(v), err
}

// Device returns GPU id after checking that it exists. The error matches
// ErrUnavailable when there is no such GPU.
func (r *Runtime) Device(id int) (*Device, error) {
	n, err := r.DeviceCount()
	if err != nil {
		return nil, err
	}
	if id < 0 || id >= n {
		return nil, markUnavailable(fmt.Errorf("GPU %d does not exist: %d GPU(s) visible; check nvidia-smi and CUDA_VISIBLE_DEVICES", id, n))
	}
	return &Device{rt: r, id: id, hostNode: -1}, nil
}

// formatCUDAVersion turns 12040 into "12.4".
func formatCUDAVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}
