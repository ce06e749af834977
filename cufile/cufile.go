package cufile

/*
#include "cufileapi.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"sync"
	"unsafe"
)

// CuFile is a loaded libcufile. It owns the process's one cuFile Driver.
// It is safe for concurrent use and never unloaded.
type CuFile struct {
	f      *C.gd_cufile // C memory
	lib    Library
	cfg    Config
	driver *Driver
}

// OpenCuFile loads libcufile (see Config for where it looks). Unless a path
// is given (Config.CuFile, GDSLOAD_LIBCUFILE), the copy beside the CUDA
// runtime that OpenRuntime(cfg) loads is preferred (same folder, or the
// same Python site-packages for pip's wheels), so that both come from one
// CUDA release; the runtime is mapped for that. It fails with an error
// matching ErrUnavailable when the library is missing or lacks a function
// gdsload calls. It does not open the cuFile driver.
func OpenCuFile(cfg Config) (*CuFile, error) {
	spec := specCuFile
	spec.explicit = cfg.CuFile
	if spec.explicit == "" && cfg.getenv(spec.env) == "" {
		rt := specCUDART
		rt.explicit = cfg.CUDART
		if l, err := cfg.open(rt); err == nil {
			spec.first = besideRuntime(l.Path, spec.files[0])
		}
	}
	l, err := cfg.open(spec)
	if err != nil {
		return nil, err
	}
	f := (*C.gd_cufile)(C.calloc(1, C.sizeof_gd_cufile))
	if missing := C.gd_cufile_load(l.Handle, f); missing != nil {
		C.free(unsafe.Pointer(f))
		return nil, spec.lacks(l.Path, C.GoString(missing))
	}
	c := &CuFile{f: f, lib: Library{Name: spec.name, Found: true, Path: l.Path}, cfg: cfg}
	c.driver = &Driver{c: c}
	c.lib.Version = libraryVersion(l.Path, func() (string, error) {
		v, err := c.Version()
		return strconv.Itoa(v), err
	})
	return c, nil
}

// Library reports what was loaded.
func (c *CuFile) Library() Library { return c.lib }

// Driver returns the library's driver handle; see Driver.Open.
func (c *CuFile) Driver() *Driver { return c.driver }

// Version returns cuFileGetVersion's value (for example 1160 for cuFile
// 1.16), or an error when the library predates the call.
func (c *CuFile) Version() (int, error) {
	var v C.int
	if err := status(C.gd_cfGetVersion(c.f, &v), "cuFileGetVersion"); err != nil {
		return 0, err
	}
	return int(v), nil
}

// status turns a CUfileError_t into nil or an *OpError. Status -1 is this
// package's own "the library lacks this call".
func status(e C.gd_cferr, op string) error {
	switch e.err {
	case 0:
		return nil
	case -1:
		return &LoadError{Library: specCuFile.name, Symbol: op}
	}
	return &OpError{Op: op, Code: int(e.err), CUDA: int(e.cu_err)}
}

// Driver is the cuFile driver: opened on first use, closed when the last
// user is done (reference counted). Every other cuFile call needs it open.
type Driver struct {
	c      *CuFile
	mu     sync.Mutex
	refs   int
	log    string // libcufile's log file, once set
	output string // what libcufile printed at the last open or close
}

// Open opens the driver, or takes one more reference when it already is.
// Each successful Open needs one Close. Failure matches ErrUnavailable and
// is an *OpError naming the CUfileOpError (for example
// CU_FILE_DRIVER_NOT_INITIALIZED (5001) when neither nvidia-fs nor P2PDMA
// is usable and compat mode is disallowed) and, where it can be told, the
// real cause (OpError.Cause: libcuda.so.1 missing, no NVIDIA driver,
// nvidia-fs not loaded).
//
// libcufile prints diagnostics on standard output and writes cufile.log
// into the current folder. Open keeps both away: the first Open points
// the log at Config.LogFile (CUFILE_LOGFILE_PATH), and while
// cuFileDriverOpen runs the process's standard output and error are sent
// to a memory file, whose text becomes OpError.Output or Messages. Output
// other threads write to those descriptors meanwhile is captured too.
func (d *Driver) Open() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refs == 0 {
		if d.log == "" {
			d.log = d.c.cfg.useLogFile()
		}
		e, out := quietly(func(fd int) C.gd_cferr { return C.gd_cfDriverOpen(d.c.f, C.int(fd)) })
		d.output = out
		if err := status(e, "cuFileDriverOpen"); err != nil {
			if oe, ok := err.(*OpError); ok {
				oe.Output = out
				oe.Cause = explainDriverOpen(oe, out, ProbePlatform(d.c.cfg))
			}
			return markUnavailable(err)
		}
	}
	d.refs++
	return nil
}

// Messages returns what libcufile printed during the driver's last open or
// close ("" for nothing).
func (d *Driver) Messages() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.output
}

// LogFile returns the file libcufile logs to, once the driver was opened.
func (d *Driver) LogFile() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log
}

// Close drops a reference taken by Open; the last one closes the driver
// (cuFileDriverClose_v2 where the library has it), its output captured as
// Open's is.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refs == 0 {
		return fmt.Errorf("cuFile driver closed more often than opened")
	}
	d.refs--
	if d.refs > 0 {
		return nil
	}
	e, out := quietly(func(fd int) C.gd_cferr { return C.gd_cfDriverClose(d.c.f, C.int(fd)) })
	if out != "" {
		d.output = out
	}
	err := status(e, "cuFileDriverClose")
	if oe, ok := err.(*OpError); ok {
		oe.Output = out
	}
	return err
}

// Properties are the cuFile driver properties (CUfileDrvProps_t).
type Properties struct {
	// NVFSMajor and NVFSMinor are the nvidia-fs driver's version; zero
	// when nvidia-fs is not in use.
	NVFSMajor, NVFSMinor int
	// PollThresholdKiB and MaxDirectIOKiB are the nvfs I/O limits.
	PollThresholdKiB, MaxDirectIOKiB int64
	// StatusFlags are CUfileDriverStatusFlags bits: file systems and
	// devices supported (bit 4 NVMe, 5 NVMe-oF, 2 NFS, ...).
	StatusFlags uint32
	// ControlFlags: bit 0 poll mode, bit 1 compat mode allowed.
	ControlFlags uint32
	// FeatureFlags: bit 0 dynamic routing, 1 batch I/O, 2 streams,
	// 3 parallel I/O, 4 P2P.
	FeatureFlags uint32
	// MaxDeviceCacheKiB, PerBufferCacheKiB, MaxPinnedMemKiB and the batch
	// limits are the library's resource limits.
	MaxDeviceCacheKiB, PerBufferCacheKiB, MaxPinnedMemKiB int64
	MaxBatchIO, MaxBatchIOTimeoutMs                       int64
}

// CompatAllowed reports whether cufile.json allows compat mode
// (properties.allow_compat_mode), cuFile's POSIX fallback.
func (p Properties) CompatAllowed() bool { return p.ControlFlags&(1<<controlAllowCompat) != 0 }

// Properties asks the open driver for its properties.
func (d *Driver) Properties() (Properties, error) {
	var p C.gd_cfprops
	if err := status(C.gd_cfGetProperties(d.c.f, &p), "cuFileDriverGetProperties"); err != nil {
		return Properties{}, err
	}
	return Properties{
		NVFSMajor: int(p.nvfs.major_version), NVFSMinor: int(p.nvfs.minor_version),
		PollThresholdKiB: int64(p.nvfs.poll_thresh_size), MaxDirectIOKiB: int64(p.nvfs.max_direct_io_size),
		StatusFlags: uint32(p.nvfs.dstatusflags), ControlFlags: uint32(p.nvfs.dcontrolflags),
		FeatureFlags:      uint32(p.fflags),
		MaxDeviceCacheKiB: int64(p.max_device_cache_size), PerBufferCacheKiB: int64(p.per_buffer_cache_size),
		MaxPinnedMemKiB: int64(p.max_device_pinned_mem_size),
		MaxBatchIO:      int64(p.max_batch_io_size), MaxBatchIOTimeoutMs: int64(p.max_batch_io_timeout_msecs),
	}, nil
}

// paramBool reads a CUFileBoolConfigParameter_t; ok is false when the
// library predates cuFileGetParameterBool or refuses the parameter.
func (d *Driver) paramBool(param int) (v, ok bool) {
	var b C.int
	if err := status(C.gd_cfGetParameterBool(d.c.f, C.int(param), &b), "cuFileGetParameterBool"); err != nil {
		return false, false
	}
	return b != 0, true
}

// p2pFlags reads cuFileDriverGetP2PFlags for a device type; ok is false
// when the library predates it.
func (d *Driver) p2pFlags(statusFlag int) (flags uint32, ok bool) {
	var f C.int
	if err := status(C.gd_cfGetP2PFlags(d.c.f, C.int(statusFlag), &f), "cuFileDriverGetP2PFlags"); err != nil {
		return 0, false
	}
	return uint32(f), true
}
