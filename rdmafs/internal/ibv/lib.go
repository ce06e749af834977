package ibv

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "lib.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"github.com/gdsload/gdsload/internal/dl"
)

// Library file names and the environment variables that override them.
const (
	VerbsLibrary = "libibverbs.so.1"
	CMLibrary    = "librdmacm.so.1"
	VerbsEnv     = "GDSLOAD_LIBIBVERBS"
	CMEnv        = "GDSLOAD_LIBRDMACM"
)

// ErrMissing wraps every failure to load rdma-core.
var ErrMissing = errors.New("rdma-core (libibverbs, librdmacm) not usable")

// Lib is libibverbs and librdmacm, loaded. It is safe for concurrent use
// (the libraries are thread safe) and is never unloaded.
type Lib struct {
	c *C.struct_gdv_lib
	// VerbsPath and CMPath are the files the dynamic loader mapped.
	VerbsPath, CMPath string
	// ABI is the highest IBVERBS_1.x symbol version libibverbs defines:
	// 12 or more means ibv_reg_dmabuf_mr (rdma-core 34+).
	ABI int
}

// Load maps libibverbs.so.1 and librdmacm.so.1 (or the files named by
// GDSLOAD_LIBIBVERBS and GDSLOAD_LIBRDMACM) and looks up every function
// used. Errors wrap ErrMissing and say which library or symbol is missing.
func Load() (*Lib, error) {
	vfile, cfile := VerbsLibrary, CMLibrary
	if v := os.Getenv(VerbsEnv); v != "" {
		vfile = v
	}
	if v := os.Getenv(CMEnv); v != "" {
		cfile = v
	}
	v, err := dl.Open(vfile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (install rdma-core's libibverbs1, or point %s at it)", ErrMissing, err, VerbsEnv)
	}
	cm, err := dl.Open(cfile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (install rdma-core's librdmacm1, or point %s at it)", ErrMissing, err, CMEnv)
	}
	vh, ch, vpath, cpath := v.Handle, cm.Handle, v.Path, cm.Path
	l := &Lib{c: (*C.struct_gdv_lib)(C.calloc(1, C.sizeof_struct_gdv_lib)), VerbsPath: vpath, CMPath: cpath}
	if missing := C.gdv_load(vh, ch, l.c); missing != nil {
		name := C.GoString(missing)
		C.free(unsafe.Pointer(l.c))
		return nil, fmt.Errorf("%w: %s or %s lacks %s at the symbol version gdsload needs: rdma-core too old or not rdma-core",
			ErrMissing, vpath, cpath, name)
	}
	l.ABI = int(C.gdv_verbs_abi(vh))
	return l, nil
}

// HasDmaBuf reports whether ibv_reg_dmabuf_mr exists (rdma-core 34+).
func (l *Lib) HasDmaBuf() bool { return l.c.reg_dmabuf_mr != nil }

// HasRelaxedOrdering reports whether registrations can ask for relaxed
// ordering (ibv_reg_mr_iova2, rdma-core 22+), which the library then
// drops on devices that do not support it.
func (l *Lib) HasRelaxedOrdering() bool { return l.c.reg_mr_iova2 != nil }

// Version is rdma-core's release as the file name of libibverbs records it
// (libibverbs.so.1.14.44.0 is rdma-core 44.0), or "" when the name does
// not say.
func (l *Lib) Version() string { return packageVersion(l.VerbsPath) }

// packageVersion reads rdma-core's version from a libibverbs file name:
// rdma-core installs libibverbs.so.SOVERSION.PABI.PACKAGE_VERSION.
func packageVersion(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	base := filepath.Base(path)
	i := strings.Index(base, ".so.")
	if i < 0 {
		return ""
	}
	parts := strings.Split(base[i+4:], ".")
	if len(parts) < 3 {
		return ""
	}
	return strings.Join(parts[2:], ".")
}

// errnoOr returns err as an errno when it is one, else fallback: libibverbs
// functions report failure by a NULL or -1 and errno, and a few forget
// errno.
func errnoOr(err error, fallback syscall.Errno) error {
	var e syscall.Errno
	if errors.As(err, &e) && e != 0 {
		return e
	}
	return fallback
}

// rcErr turns the return of a libibverbs function that returns an errno
// value (0 on success) into an error.
func rcErr(rc C.int) error {
	if rc == 0 {
		return nil
	}
	if rc < 0 {
		rc = -rc
	}
	return syscall.Errno(rc)
}

// WCStatus names a work-completion status as libibverbs does.
func (l *Lib) WCStatus(status int) string {
	return C.GoString(C.gdv_wc_status_str(l.c, C.int(status)))
}

// EventName names an rdma_cm event as librdmacm does.
func (l *Lib) EventName(ev int) string { return C.GoString(C.gdv_event_str(l.c, C.int(ev))) }
