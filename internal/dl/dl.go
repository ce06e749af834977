// Package dl maps shared libraries at run time with dlopen, so that gdsload
// links against none of the optional libraries it drives (the CUDA runtime
// and driver, cuFile, rdma-core, libzstd, libdeflate) and one binary runs
// where they are missing. Symbols are looked up by each user's own C code
// (dlsym or dlvsym on Lib.Handle), where the function-pointer types are
// declared.
//
// Libraries opened here are never closed: CUDA and rdma-core keep state
// (contexts, provider plugins) that does not survive an unload.
package dl

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

// dl_loaded_path returns the file the dynamic loader mapped for h.
static const char *dl_loaded_path(void *h) {
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) return NULL;
	return lm->l_name;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"
)

// Lib is a library mapped with dlopen.
type Lib struct {
	// Handle is dlopen's handle, for the caller's dlsym and dlvsym.
	Handle unsafe.Pointer
	// Path is the file the dynamic loader actually mapped (the name
	// asked for when it cannot say).
	Path string
}

// Open maps file (a bare name uses the dynamic loader's search) with
// RTLD_NOW|RTLD_LOCAL, so a library missing one of its own dependencies
// fails here rather than at its first call. The error is dlerror's text.
func Open(file string) (*Lib, error) {
	cs := C.CString(file)
	defer C.free(unsafe.Pointer(cs))
	// dlerror's message is per thread: keep dlopen and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := C.dlopen(cs, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		if msg := C.dlerror(); msg != nil {
			return nil, errors.New(C.GoString(msg))
		}
		return nil, errors.New("dlopen " + file + " failed")
	}
	l := &Lib{Handle: h, Path: file}
	if p := C.dl_loaded_path(h); p != nil && C.GoString(p) != "" {
		l.Path = C.GoString(p)
	}
	return l, nil
}

// OpenFirst maps the first of names that accept takes (it looks up the
// symbols and checks the version, and says why not), or instead only the
// library that the environment variable env names, or none when it says
// "off". what names the library in errors ("the system's libzstd"). The
// error joins each candidate's reason.
func OpenFirst(env, what string, names []string, accept func(*Lib) error) (*Lib, error) {
	switch v := os.Getenv(env); v {
	case "":
	case "off":
		return nil, fmt.Errorf("%s is disabled by %s=off", what, env)
	default:
		names = []string{v}
	}
	var errs []error
	for _, name := range names {
		l, err := Open(name)
		if err == nil {
			err = accept(l)
		}
		if err == nil {
			return l, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
