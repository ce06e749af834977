package cufile

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable is matched (with errors.Is) by every error that means the
// GPU stack cannot be used at all: a library missing or too old, no GPU, a
// CUDA driver too old for the runtime, a cuFile driver that will not open.
// Callers fall back to another data path on it.
var ErrUnavailable = errors.New("GPU stack unavailable")

// ErrOutOfMemory is matched by allocation failures (device or pinned host
// memory).
var ErrOutOfMemory = errors.New("out of GPU or pinned memory")

// unavailable marks err as meaning ErrUnavailable without changing its text.
type unavailable struct{ err error }

func (e unavailable) Error() string        { return e.err.Error() }
func (e unavailable) Unwrap() error        { return e.err }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

// markUnavailable returns err so that errors.Is(err, ErrUnavailable) holds.
func markUnavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return unavailable{err}
}

// LoadError reports a library that could not be loaded or lacks a symbol.
// It always matches ErrUnavailable.
type LoadError struct {
	// Library is the library's file name, such as "libcufile.so.0".
	Library string
	// Env is the environment variable that overrides its path.
	Env string
	// Tried lists the paths attempted, in order.
	Tried []string
	// Symbol is set when the library loaded but lacks this function.
	Symbol string
	// Err is the dynamic loader's message for a candidate that exists but
	// failed to load; nil when none of them exists.
	Err error
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.Symbol != "" {
		fmt.Fprintf(&b, "%s", e.Library)
		if len(e.Tried) > 0 {
			fmt.Fprintf(&b, " at %s", strings.Join(e.Tried, ", "))
		}
		fmt.Fprintf(&b, " lacks %s (too old?)", e.Symbol)
	} else {
		if e.Err != nil {
			fmt.Fprintf(&b, "%s failed to load: %v", e.Library, e.Err)
		} else {
			fmt.Fprintf(&b, "%s not found (tried %s)", e.Library, strings.Join(e.Tried, ", "))
		}
	}
	if e.Env != "" {
		fmt.Fprintf(&b, "; install it or set %s to its path", e.Env)
	}
	return b.String()
}

func (e *LoadError) Unwrap() error        { return e.Err }
func (e *LoadError) Is(target error) bool { return target == ErrUnavailable }

// CUDAError is a failed CUDA runtime call (a cudaError_t).
type CUDAError struct {
	// Op is the call, with what it was asked, such as
	// "cudaMalloc(1073741824 bytes) on GPU 0".
	Op string
	// Code is the cudaError_t value.
	Code int
	// Msg is cudaGetErrorString's text.
	Msg string
}

// CUDA runtime error codes the package interprets.
const (
	cudaSuccess                 = 0
	cudaErrorMemoryAllocation   = 2
	cudaErrorInitialization     = 3
	cudaErrorStubLibrary        = 34
	cudaErrorInsufficientDriver = 35
	cudaErrorNoDevice           = 100
	cudaErrorInvalidDevice      = 101
	cudaErrorNotReady           = 600
	cudaErrorSystemNotReady     = 802
	cudaErrorCompatNotSupported = 804
)

var cudaErrorNames = map[int]string{
	1:   "cudaErrorInvalidValue",
	2:   "cudaErrorMemoryAllocation",
	3:   "cudaErrorInitializationError",
	34:  "cudaErrorStubLibrary",
	35:  "cudaErrorInsufficientDriver",
	100: "cudaErrorNoDevice",
	101: "cudaErrorInvalidDevice",
	400: "cudaErrorInvalidResourceHandle",
	600: "cudaErrorNotReady",
	700: "cudaErrorIllegalAddress",
	719: "cudaErrorLaunchFailure",
	802: "cudaErrorSystemNotReady",
	804: "cudaErrorCompatNotSupportedOnDevice",
	999: "cudaErrorUnknown",
}

func (e *CUDAError) Error() string {
	name := cudaErrorNames[e.Code]
	if name == "" {
		name = "cudaError"
	}
	s := fmt.Sprintf("%s failed: %s (%s %d)", e.Op, e.Msg, name, e.Code)
	switch e.Code {
	case cudaErrorInsufficientDriver:
		s += "; no NVIDIA driver is loaded, or it is older than this CUDA runtime: install or update the driver, or use an older runtime"
	case cudaErrorNoDevice:
		s += "; check nvidia-smi and CUDA_VISIBLE_DEVICES"
	case cudaErrorMemoryAllocation:
		s += "; free GPU memory or load less at once"
	}
	return s
}

// Is matches ErrUnavailable for codes that mean no usable GPU, and
// ErrOutOfMemory for allocation failures.
func (e *CUDAError) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		switch e.Code {
		case cudaErrorInitialization, cudaErrorStubLibrary, cudaErrorInsufficientDriver,
			cudaErrorNoDevice, cudaErrorInvalidDevice, cudaErrorSystemNotReady, cudaErrorCompatNotSupported:
			return true
		}
	case ErrOutOfMemory:
		return e.Code == cudaErrorMemoryAllocation
	}
	return false
}

// DriverAPIError is a failed CUDA driver API call (a CUresult).
type DriverAPIError struct {
	Op   string
	Code int
	Msg  string
}

func (e *DriverAPIError) Error() string {
	return fmt.Sprintf("%s failed: %s (CUresult %d)", e.Op, e.Msg, e.Code)
}

// Is matches ErrUnavailable for CUDA_ERROR_NOT_INITIALIZED (3),
// CUDA_ERROR_STUB_LIBRARY (34) and CUDA_ERROR_NO_DEVICE (100).
func (e *DriverAPIError) Is(target error) bool {
	return target == ErrUnavailable && (e.Code == 3 || e.Code == 34 || e.Code == 100)
}
