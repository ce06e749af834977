package ibv

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

static const char *gdv_loaded_path(void *h) {
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

// dlopen maps file (a bare name uses the dynamic loader's search) with
// RTLD_NOW, so a library missing one of its own dependencies fails here,
// and returns the handle and the path actually mapped. Handles are never
// closed: libibverbs keeps provider plugins loaded and unloading it under
// live device contexts is not supported.
func dlopen(file string) (unsafe.Pointer, string, error) {
	cs := C.CString(file)
	defer C.free(unsafe.Pointer(cs))
	// dlerror's message is per thread: keep dlopen and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := C.dlopen(cs, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		if msg := C.dlerror(); msg != nil {
			return nil, "", errors.New(C.GoString(msg))
		}
		return nil, "", errors.New("dlopen " + file + " failed")
	}
	path := file
	if p := C.gdv_loaded_path(h); p != nil && C.GoString(p) != "" {
		path = C.GoString(p)
	}
	return h, path, nil
}
