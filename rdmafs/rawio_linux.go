package rdmafs

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// streamReader reads a TCP connection with raw read(2) calls: calls that
// the Go scheduler does not see as system calls. A plain Read tells the
// scheduler the thread may block; once such a call has lasted 20 µs the
// runtime's monitor hands the thread's P to another thread, and a read
// that copies a segment (up to 512 KiB) from the socket often lasts that
// long. Each handoff is a thread wake-up, a context switch and, on a VM,
// an IPI; a client receiving at full speed made thousands of them a
// second, and kept the monitor polling every 20 µs. A read of a
// non-blocking socket never waits for data (EAGAIN parks the goroutine in
// the poller as a plain Read does); it is a copy, so it keeps its P like
// one. Deadlines and Close work as for the connection's own Read.
type streamReader struct {
	rc syscall.RawConn
}

// newStreamReader returns the reader for a client connection's stream: a
// streamReader on TCP, the connection itself on anything else.
func newStreamReader(c net.Conn) io.Reader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &streamReader{rc: rc}
}

func (r *streamReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// sendFileData writes the DATA frame header hdr and then n bytes of f
// from offset off to the TCP connection c with sendfile(2). The header
// goes with MSG_MORE, so that the kernel sends it in the same segment as
// the first file bytes instead of alone: one wake-up of the client per
// piece, not two. It returns the file bytes sent, fewer than n only with
// an error or when the file ended.
func sendFileData(c *net.TCPConn, hdr []byte, f *os.File, off, n int64) (int64, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	fc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var sent int64
	var serr error
	cerr := fc.Control(func(in uintptr) {
		werr := rc.Write(func(out uintptr) bool {
			for len(hdr) > 0 {
				w, _, errno := syscall.Syscall6(syscall.SYS_SENDTO, out, uintptr(unsafe.Pointer(&hdr[0])), uintptr(len(hdr)), syscall.MSG_MORE, 0, 0)
				switch errno {
				case 0:
					hdr = hdr[w:]
				case syscall.EINTR:
				case syscall.EAGAIN:
					return false
				default:
					serr = os.NewSyscallError("sendto", errno)
					return true
				}
			}
			for sent < n {
				w, err := syscall.Sendfile(int(out), int(in), &off, int(min(n-sent, 1<<30)))
				switch {
				case err == syscall.EINTR:
				case err == syscall.EAGAIN:
					return false
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case w == 0:
					return true // the file ended
				default:
					sent += int64(w)
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	return sent, serr
}
