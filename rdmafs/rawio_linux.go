package rdmafs

import (
	"io"
	"net"
	"os"
	"runtime"
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

// newStreamReader returns the reader for a connection's stream (the
// client's DATA, the server's requests): a streamReader on TCP, the
// connection itself on anything else.
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

// sendFileData writes the DATA frame header hdr and then n bytes of sf
// from offset off to the TCP connection c with sendfile(2). The header
// goes with MSG_MORE, so that the kernel sends it in the same segment as
// the first file bytes instead of alone: one wake-up of the client per
// piece, not two. It returns the file bytes sent, fewer than n only with
// an error or when the file ended.
//
// The socket is non-blocking, so the header's send never waits, and nor
// does sendfile when the piece is in the page cache (residentRange): both
// are then raw system calls, which the Go scheduler does not see (see
// serverfile_linux.go for why that matters). A piece not wholly in the
// page cache is sent with a plain system call, because sendfile then waits
// for the disk.
func sendFileData(c *net.TCPConn, hdr []byte, sf *sendFile, off, n int64) (int64, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	in := sf.fd
	// Once for the piece, not again for each part sent after EAGAIN. A
	// cachestat walks the piece's pages (256 for the default 1 MiB
	// BufferSize), a small share of the server's CPU
	// (docs/PERFORMANCE-NOTES.md, rdmafs).
	raw := residentRange(in, off, n)
	var sent int64
	var serr error
	werr := rc.Write(func(out uintptr) bool {
		for len(hdr) > 0 {
			w, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, out, uintptr(unsafe.Pointer(&hdr[0])), uintptr(len(hdr)), syscall.MSG_MORE, 0, 0)
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
			k := min(n-sent, 1<<30)
			var w uintptr
			var errno syscall.Errno
			if raw {
				w, _, errno = syscall.RawSyscall6(syscall.SYS_SENDFILE, out, in, uintptr(unsafe.Pointer(&off)), uintptr(k), 0, 0)
			} else {
				w, _, errno = syscall.Syscall6(syscall.SYS_SENDFILE, out, in, uintptr(unsafe.Pointer(&off)), uintptr(k), 0, 0)
			}
			switch {
			case errno == syscall.EINTR:
			case errno == syscall.EAGAIN:
				return false
			case errno != 0:
				serr = os.NewSyscallError("sendfile", errno)
				return true
			case w == 0:
				return true // the file ended
			default:
				sent += int64(w)
			}
		}
		return true
	})
	runtime.KeepAlive(sf)
	if serr == nil {
		serr = werr
	}
	return sent, serr
}

// writeBuffers writes every byte of bufs to c, a TCP connection, with raw
// writev(2) calls (a non-blocking socket's write never waits; EAGAIN parks
// the goroutine in the poller as a plain Write does). Deadlines and Close
// work as for the connection's own Write. Anything but TCP gets a plain
// write.
func writeBuffers(c net.Conn, bufs [][]byte) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		nb := net.Buffers(bufs)
		_, err := nb.WriteTo(c)
		return err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var iov [4]syscall.Iovec
	var serr error
	werr := rc.Write(func(fd uintptr) bool {
		for {
			k := 0
			for _, b := range bufs {
				if k == len(iov) {
					break
				}
				if len(b) > 0 {
					iov[k].Base = &b[0]
					iov[k].SetLen(len(b))
					k++
				}
			}
			if k == 0 {
				return true
			}
			w, _, errno := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
			switch errno {
			case 0:
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			default:
				serr = os.NewSyscallError("writev", errno)
				return true
			}
			for len(bufs) > 0 && uintptr(len(bufs[0])) <= w {
				w -= uintptr(len(bufs[0]))
				bufs = bufs[1:]
			}
			if len(bufs) > 0 {
				bufs[0] = bufs[0][w:]
			}
		}
	})
	if serr == nil {
		serr = werr
	}
	return serr
}
