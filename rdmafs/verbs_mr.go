//go:build rdma && linux

package rdmafs

// #include <infiniband/verbs.h>
import "C"

import (
	"runtime"
	"unsafe"
)

// clientMR is a registered destination buffer. The Go memory is pinned for
// as long as the NIC may write into it.
type clientMR struct {
	mr     *C.struct_ibv_mr
	pinner runtime.Pinner
	addr   uint64
	rkey   uint32
}

func registerClientMR(ep *qpEndpoint, p []byte) (*clientMR, error) {
	r := &clientMR{addr: uint64(uintptr(unsafe.Pointer(&p[0])))}
	r.pinner.Pin(&p[0])
	mr, err := ep.regMR(p)
	if err != nil {
		r.pinner.Unpin()
		return nil, err
	}
	r.mr, r.rkey = mr, mrRkey(mr)
	return r, nil
}

// release deregisters (after which the NIC refuses writes) and unpins.
func (r *clientMR) release() {
	deregMR(r.mr)
	r.pinner.Unpin()
}
