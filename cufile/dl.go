package cufile

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

// gd_loaded_path returns the file the dynamic loader mapped for h.
static const char *gd_loaded_path(void *h) {
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) return NULL;
	return lm->l_name;
}
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// dlib is a library mapped with dlopen. It is never closed (see the package
// documentation).
type dlib struct {
	h    unsafe.Pointer
	path string // the file actually mapped
}

// dlopen maps path (a bare file name uses the loader's search) with
// RTLD_NOW, so a library missing one of its own dependencies fails here and
// not at the first call.
func dlopen(path string) (*dlib, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	// dlerror's message is per thread: keep dlopen and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := C.dlopen(cs, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		msg := C.dlerror()
		if msg == nil {
			return nil, errors.New("dlopen " + path + " failed")
		}
		return nil, errors.New(C.GoString(msg))
	}
	l := &dlib{h: h, path: path}
	if p := C.gd_loaded_path(h); p != nil && C.GoString(p) != "" {
		l.path = C.GoString(p)
	}
	return l, nil
}
