package rdmafs

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// Sentinel errors. Every error returned by the client wraps one of them, so
// callers branch with errors.Is.
var (
	// ErrAuth: the handshake failed: wrong or missing token, or the server
	// could not prove it knows the token. Not retried.
	ErrAuth = errors.New("authentication failed")
	// ErrNotFound: the file or directory does not exist on the server. It
	// matches fs.ErrNotExist, as a missing local file's error does.
	ErrNotFound error = &fsSentinel{"not found", fs.ErrNotExist}
	// ErrPermission: the server refused the path (it escapes the export
	// root) or cannot read it. It matches fs.ErrPermission.
	ErrPermission error = &fsSentinel{"permission denied", fs.ErrPermission}
	// ErrInvalid: the request was refused as malformed: bad name (NUL,
	// absolute, "..", too long), directory where a file was expected, a
	// length over the server's limits.
	ErrInvalid = errors.New("invalid request")
	// ErrServerGone: the server could not be reached, or the connection
	// was lost and retries ran out before the retry deadline.
	ErrServerGone = errors.New("server unreachable or connection lost")
	// ErrProtocol: the peer broke the protocol (bad frame, wrong version,
	// unexpected message). Usually a version mismatch or a bug.
	ErrProtocol = errors.New("rdmafs protocol error")
	// ErrChecksum: the CRC32C of received data did not match the server's.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrIO: the server failed to read its storage.
	ErrIO = errors.New("server I/O error")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client closed")
	// ErrRegion: a destination region was refused: unknown or deregistered
	// key, or a write outside the registered range.
	ErrRegion = errors.New("RDMA destination region refused")
	// ErrNoRDMA: RDMA is not available in this build or on this machine.
	ErrNoRDMA = errors.New("RDMA unavailable")
	// ErrNoGPUDirect: a read into GPU memory cannot be done by RDMA: the
	// transport is not verbs, the client has no DeviceMemory, neither
	// dma-buf nor nvidia-peermem registration works, or the final flush
	// failed. Callers read into pinned host memory and copy instead.
	ErrNoGPUDirect = errors.New("GPU memory cannot be an RDMA destination")
)

// fsSentinel is a sentinel that also matches the io/fs error of the same
// meaning, so errors.Is(err, fs.ErrNotExist) holds for a missing remote
// file as for a missing local one.
type fsSentinel struct {
	msg string
	fs  error
}

func (e *fsSentinel) Error() string        { return e.msg }
func (e *fsSentinel) Is(target error) bool { return target == e.fs }

// Error is a failed operation on the server. It unwraps to the sentinel
// matching Code.
type Error struct {
	Op     string    // "stat", "list", "read", "dial", "handshake"
	Name   string    // file name, if any
	Offset int64     // for reads
	Code   wire.Code // server error code; 0 when the failure was local
	Msg    string    // server's or local explanation
	Err    error     // sentinel or underlying cause
}

func (e *Error) Error() string {
	s := "rdmafs " + e.Op
	if e.Name != "" {
		s += " " + e.Name
	}
	if e.Op == "read" {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	if e.Code != 0 {
		s += fmt.Sprintf(": server says %s", e.Code)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

// Unwrap returns the sentinel or underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// codeErr maps a wire code to its sentinel.
func codeErr(c wire.Code) error {
	switch c {
	case wire.CodeAuth:
		return ErrAuth
	case wire.CodeNotFound:
		return ErrNotFound
	case wire.CodePermission:
		return ErrPermission
	case wire.CodeInvalid, wire.CodeIsDir, wire.CodeNotDir, wire.CodeNotRegular, wire.CodeTooLarge:
		return ErrInvalid
	case wire.CodeIO:
		return ErrIO
	case wire.CodeShuttingDown, wire.CodeBusy:
		return ErrServerGone
	case wire.CodeRegion:
		return ErrRegion
	default:
		return ErrProtocol
	}
}

// retryable reports whether a failed idempotent request may be sent again
// on a fresh connection.
func retryable(err error) bool {
	return errors.Is(err, ErrServerGone)
}
