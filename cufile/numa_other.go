//go:build !linux

package cufile

import (
	"errors"
	"unsafe"
)

var errNoNUMA = errors.New("NUMA placement is supported on Linux only")

func preferHostNode(int) error                    { return errNoNUMA }
func resetHostNode()                              {}
func bindHostNode(unsafe.Pointer, int, int) error { return errNoNUMA }
func unsafePointer(p *byte) unsafe.Pointer        { return unsafe.Pointer(p) }
