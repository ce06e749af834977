package cufile

/*
#include "cudart.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Stream is a CUDA stream created non-blocking (cudaStreamNonBlocking), so
// it does not synchronize with the legacy default stream. Work on one
// stream runs in order; Synchronize waits for all of it.
type Stream struct {
	d *Device
	s unsafe.Pointer // cudaStream_t
}

// NewStream creates a stream on the device.
func (d *Device) NewStream() (*Stream, error) {
	var s unsafe.Pointer
	err := d.Do(func() error {
		return d.rt.check(C.gd_streamCreate(d.rt.f, &s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags on GPU %d", d.id)
	})
	if err != nil {
		return nil, err
	}
	return &Stream{d: d, s: s}, nil
}

func checkRange(op string, off, n, size int) error {
	if off < 0 || n < 0 || off > size || n > size-off {
		return fmt.Errorf("%s: range [%d, %d) outside buffer of %d bytes", op, off, off+n, size)
	}
	return nil
}

// CopyToDeviceAsync queues a copy of src.Bytes()[off:off+n] to device
// address dst. The copy reads src when it runs: src must not be written
// until an event recorded after this call has completed.
func (s *Stream) CopyToDeviceAsync(dst DevicePtr, src *PinnedBuffer, off, n int) error {
	if err := checkRange("cudaMemcpyAsync", off, n, src.n); err != nil {
		return err
	}
	p := unsafe.Add(src.p, off)
	// Tested here, not in check: the message's arguments would be boxed
	// (an allocation per chunk) even when the copy is queued.
	if code := C.gd_memcpyHtoDAsync(s.d.rt.f, C.uintptr_t(dst), p, C.size_t(n), s.s); code != cudaSuccess {
		return s.d.rt.check(code, "cudaMemcpyAsync(%d bytes, host to GPU %d)", n, s.d.id)
	}
	return nil
}

// CopyFromDeviceAsync queues a copy of n bytes at device address src into
// dst.Bytes()[off:off+n]. The bytes are there once the stream or a later
// event is synchronized.
func (s *Stream) CopyFromDeviceAsync(dst *PinnedBuffer, off, n int, src DevicePtr) error {
	if err := checkRange("cudaMemcpyAsync", off, n, dst.n); err != nil {
		return err
	}
	p := unsafe.Add(dst.p, off)
	if code := C.gd_memcpyDtoHAsync(s.d.rt.f, p, C.uintptr_t(src), C.size_t(n), s.s); code != cudaSuccess {
		return s.d.rt.check(code, "cudaMemcpyAsync(%d bytes, GPU %d to host)", n, s.d.id)
	}
	return nil
}

// Synchronize waits until all work queued on the stream is done and
// returns the first error any of it met.
func (s *Stream) Synchronize() error {
	return s.d.rt.check(C.gd_streamSynchronize(s.d.rt.f, s.s), "cudaStreamSynchronize on GPU %d", s.d.id)
}

// Destroy releases the stream after its queued work completes.
func (s *Stream) Destroy() error {
	return s.d.rt.check(C.gd_streamDestroy(s.d.rt.f, s.s), "cudaStreamDestroy on GPU %d", s.d.id)
}

// Event marks a point in a stream (created without timing, which is
// cheaper). It completes when all work queued before Record has.
type Event struct {
	d *Device
	e unsafe.Pointer // cudaEvent_t
}

// NewEvent creates an event on the device.
func (d *Device) NewEvent() (*Event, error) {
	var e unsafe.Pointer
	err := d.Do(func() error {
		return d.rt.check(C.gd_eventCreate(d.rt.f, &e, cudaEventDisableTiming), "cudaEventCreateWithFlags on GPU %d", d.id)
	})
	if err != nil {
		return nil, err
	}
	return &Event{d: d, e: e}, nil
}

// Record marks the current end of s; the event completes when the work
// queued so far on s has.
func (e *Event) Record(s *Stream) error {
	return e.d.rt.check(C.gd_eventRecord(e.d.rt.f, e.e, s.s), "cudaEventRecord on GPU %d", e.d.id)
}

// Synchronize waits for the event and returns the error, if any, of the
// work it follows.
func (e *Event) Synchronize() error {
	return e.d.rt.check(C.gd_eventSynchronize(e.d.rt.f, e.e), "cudaEventSynchronize on GPU %d", e.d.id)
}

// Query reports whether the event has completed, without waiting.
func (e *Event) Query() (bool, error) {
	code := C.gd_eventQuery(e.d.rt.f, e.e)
	if code == cudaErrorNotReady {
		return false, nil
	}
	if err := e.d.rt.check(code, "cudaEventQuery on GPU %d", e.d.id); err != nil {
		return false, err
	}
	return true, nil
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	return e.d.rt.check(C.gd_eventDestroy(e.d.rt.f, e.e), "cudaEventDestroy on GPU %d", e.d.id)
}
