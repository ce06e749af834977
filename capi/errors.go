package main

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// status is a gdsload_status (gdsload.h) in Go terms; tests use it
// without cgo.
type status int32

const (
	statusOK          status = 0
	statusNotFound    status = 1
	statusPermission  status = 2
	statusInvalid     status = 3
	statusCanceled    status = 4
	statusIO          status = 5
	statusPending     status = 6
	statusEnd         status = 7
	statusUnavailable status = 8
)

// requestError is a malformed request: bad JSON, an unknown device or
// mode. It maps to statusInvalid.
type requestError struct{ msg string }

func (e requestError) Error() string { return e.msg }

// statusOf classifies err for the caller, who raises the matching
// exception: missing things, refused access, corrupt or unsupported
// files, cancellation, a missing GPU; everything else is an I/O error.
func statusOf(err error) status {
	var (
		se  *safetensors.Error
		ne  *npy.Error
		we  *webdataset.Error
		req requestError
	)
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return statusCanceled
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, rdmafs.ErrNotFound):
		return statusNotFound
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, rdmafs.ErrAuth) || errors.Is(err, rdmafs.ErrPermission):
		return statusPermission
	case errors.As(err, &req):
		return statusInvalid
	case errors.As(err, &se) && !errors.Is(err, safetensors.ErrRead),
		errors.As(err, &ne) && !errors.Is(err, npy.ErrRead),
		errors.As(err, &we),
		errors.Is(err, checkpoint.ErrFormat), errors.Is(err, checkpoint.ErrDuplicateTensor),
		errors.Is(err, checkpoint.ErrWeightMap), errors.Is(err, checkpoint.ErrNotViewable), errors.Is(err, checkpoint.ErrURLDestination),
		errors.Is(err, webdataset.ErrShardSize), errors.Is(err, webdataset.ErrShardChecksum),
		errors.Is(err, iterator.ErrOtherDataset), errors.Is(err, iterator.ErrImpossibleShard):
		return statusInvalid
	case errors.Is(err, cufile.ErrUnavailable):
		return statusUnavailable
	}
	return statusIO
}

// errnoOf is the system error number err wraps (ENOSPC, ENOTDIR,
// EISDIR, ...), or 0: the caller raises the exception of that errno.
func errnoOf(err error) int {
	var e syscall.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return 0
}
