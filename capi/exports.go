package main

/*
#include <stdlib.h>
#include "gdsload.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/cgo"
	"time"
	"unsafe"
)

// The functions below are the Go half of gdsload.h; alloc.c holds the C
// half. Each one returns a gdsload_status and sets *err on failure.

// setErr stores err's message for the caller, who frees it.
func setErr(out **C.char, err error) C.gdsload_status {
	st := statusOf(err)
	if out != nil {
		*out = C.CString(err.Error())
	}
	return C.gdsload_status(st)
}

// setString stores b as a malloc'd NUL-terminated string.
func setString(out **C.char, b []byte) {
	if out != nil {
		*out = C.CString(string(b))
	}
}

//export gdsload_build_info
func gdsload_build_info() *C.char {
	v := buildVersion()
	b, _ := json.Marshal(v)
	return C.CString(string(b))
}

// startJob decodes a request into v and runs fn on it in the background.
func startJob[T any](request *C.char, job *C.uint64_t, errOut **C.char, fn func(context.Context, T) ([]byte, error)) C.gdsload_status {
	if request == nil || job == nil {
		return setErr(errOut, requestError{"request and job must not be NULL"})
	}
	var req T
	if err := decodeRequest([]byte(C.GoString(request)), &req); err != nil {
		return setErr(errOut, err)
	}
	*job = C.uint64_t(lib.jobs.start(func(ctx context.Context) ([]byte, error) { return fn(ctx, req) }))
	return C.GDSLOAD_OK
}

//export gdsload_load
func gdsload_load(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.load)
}

//export gdsload_save
func gdsload_save(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.save)
}

//export gdsload_dataset_open
func gdsload_dataset_open(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.openDataset)
}

// timeout turns a timeout in milliseconds into a duration; negative
// means a day (as good as forever for a poll loop).
func timeout(ms C.int32_t) time.Duration {
	if ms < 0 {
		return 24 * time.Hour
	}
	return time.Duration(ms) * time.Millisecond
}

//export gdsload_wait
func gdsload_wait(id C.uint64_t, timeoutMs C.int32_t, result **C.char, errOut **C.char) C.gdsload_status {
	res, err, ok := lib.jobs.wait(uint64(id), timeout(timeoutMs))
	if !ok {
		return C.GDSLOAD_PENDING
	}
	if err != nil {
		if n := errnoOf(err); n != 0 {
			setString(result, fmt.Appendf(nil, `{"errno": %d}`, n))
		}
		return setErr(errOut, err)
	}
	setString(result, res)
	return C.GDSLOAD_OK
}

//export gdsload_cancel
func gdsload_cancel(id C.uint64_t) { lib.jobs.cancel(uint64(id)) }

//export gdsload_next
func gdsload_next(id C.uint64_t, timeoutMs C.int32_t, sample *unsafe.Pointer, n *C.uint64_t, errOut **C.char) C.gdsload_status {
	h := lib.iterators.get(uint64(id))
	if h == nil {
		return setErr(errOut, requestError{"no such iterator (closed, or never opened)"})
	}
	buf, size, err, ok := h.next(timeout(timeoutMs))
	switch {
	case !ok:
		return C.GDSLOAD_PENDING
	case errors.Is(err, io.EOF):
		return C.GDSLOAD_END
	case err != nil:
		return setErr(errOut, err)
	}
	*sample, *n = buf, C.uint64_t(size)
	return C.GDSLOAD_OK
}

//export gdsload_state
func gdsload_state(id C.uint64_t, state **C.char, errOut **C.char) C.gdsload_status {
	h := lib.iterators.get(uint64(id))
	if h == nil {
		return setErr(errOut, requestError{"no such iterator (closed, or never opened)"})
	}
	b, err := json.Marshal(h.currentState())
	if err != nil {
		return setErr(errOut, err)
	}
	setString(state, b)
	return C.GDSLOAD_OK
}

//export gdsload_iterator_close
func gdsload_iterator_close(id C.uint64_t) { lib.iterators.close(uint64(id)) }

// gdsloadReleaseHandle frees Go-owned memory (a GPU destination) whose
// last view died; alloc.c calls it.
//
//export gdsloadReleaseHandle
func gdsloadReleaseHandle(h C.uintptr_t) {
	hd := cgo.Handle(h)
	if c, ok := hd.Value().(io.Closer); ok {
		_ = c.Close()
	}
	hd.Delete()
}
