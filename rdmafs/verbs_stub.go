//go:build !rdma || !linux

package rdmafs

import "fmt"

// Verbs returns the RDMA verbs transport. This build was made without the
// rdma tag, so it always fails with an error wrapping ErrNoRDMA.
func Verbs() (Transport, error) {
	return nil, fmt.Errorf("%w: built without RDMA support (rebuild with -tags rdma); use --transport tcp", ErrNoRDMA)
}
