package rdmafs

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// canSendfile reports whether a READ can skip the buffer pool: on a TCP
// stream the kernel sends file pages straight to the socket (sendfile),
// with no copy in user space.
//
// A CRC32C, when asked for, comes from the server's digest cache for the
// whole 1 MiB blocks it has summed before, and is computed for the rest
// by reading the bytes into a pool buffer a cache-sized piece at a time,
// ahead of their sendfile: the CPU reads them once, the first time, and
// the socket gets them from the page cache.
func (sc *serverConn) canSendfile(_ wire.Read, region bool) bool {
	_, tcp := sc.c.(*net.TCPConn)
	return tcp && !region
}

// sendFile is the file a READ is sent from with sendfile(2): a descriptor,
// what fstat said of it at open, and the *os.File that owns the
// descriptor when it was opened through os.Root (nil when openCached
// opened it; see serverfile_linux.go).
type sendFile struct {
	fd uintptr
	st syscall.Stat_t
	f  *os.File
}

// openSendFile opens a regular file for a sendfile READ: with system calls
// the Go scheduler does not see where the platform and the kernel's caches
// allow it (openCached), through os.Root otherwise, which also gives every
// refusal its error.
func (sc *serverConn) openSendFile(name string) (*sendFile, *requestError) {
	if sf := sc.s.openCached(name); sf != nil {
		return sf, nil
	}
	f, fi, rerr := sc.openRegular(name)
	if rerr != nil {
		return nil, rerr
	}
	return sendFileOf(f, fi), nil
}

// sendFileOf is the sendFile of f, opened through os.Root, whose Stat is
// fi.
func sendFileOf(f *os.File, fi os.FileInfo) *sendFile {
	return &sendFile{fd: f.Fd(), st: *fi.Sys().(*syscall.Stat_t), f: f}
}

// fdReaderAt reads a sendFile's descriptor with pread(2), plain system
// calls (they may wait for the disk), for the digests the server computes
// itself, whichever way the file was opened. Its errors name no path: the
// client sees them, and must not learn where the export lives.
type fdReaderAt uintptr

func (fd fdReaderAt) ReadAt(p []byte, off int64) (int, error) {
	var done int
	for done < len(p) {
		n, err := syscall.Pread(int(fd), p[done:], off+int64(done))
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return done, os.NewSyscallError("pread", err)
		case n == 0:
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

func (sf *sendFile) close() {
	if sf.f != nil {
		sf.f.Close()
		return
	}
	closeRaw(sf.fd)
}

// sendfilePieces serves a READ with sendfile(2) in BufferSize pieces. The
// piece sizes are fixed from the file as it was at open; if the file
// shrinks under the server the stream can no longer be trusted, so the
// connection is dropped (the client retries the idempotent read on a new
// one).
func (sc *serverConn) sendfilePieces(id uint32, sf *sendFile, name string, m wire.Read) (sent uint32, eof bool, crc uint32, rerr *requestError) {
	size := sf.st.Size
	end := int64(m.Offset) + int64(m.Length)
	if end > size {
		end, eof = max(size, int64(m.Offset)), true
	}
	total := uint32(end - int64(m.Offset))
	if total == 0 {
		return 0, eof, 0, nil
	}
	wantCRC := m.Flags&wire.ReadCRC != 0
	var fd *fileDigests
	if wantCRC {
		fd = sc.s.digests.lookup(&sf.st)
	}
	compute := func(crc uint32, off, n int64) (uint32, error) { return sc.preadCRC(fdReaderAt(sf.fd), crc, off, n) }
	var summed uint32 // bytes of the READ in crc
	for sent < total {
		n := min(total-sent, uint32(sc.s.cfg.BufferSize))
		if wantCRC && sent+n > summed {
			// Sum ahead to a block boundary, so that whole blocks are
			// summed (and cached) whatever the piece size.
			upto := uint32(min(alignUp(int64(m.Offset)+int64(sent+n), digestBlock)-int64(m.Offset), int64(total)))
			var err error
			if crc, err = fd.crcRange(crc, int64(m.Offset)+int64(summed), int64(upto-summed), compute); err != nil {
				return sent, false, 0, refuse(wire.CodeIO, "read %s at offset %d: %v", name, int64(m.Offset)+int64(summed), err)
			}
			summed = upto
		}
		if err := sc.sendfileOne(id, sf, int64(m.Offset)+int64(sent), sent, n); err != nil {
			return sent, false, 0, refuse(wire.CodeShuttingDown, "read %s: %v", name, err)
		}
		sent += n
		sc.s.metrics.bytesSent.Add(uint64(n))
	}
	return sent, eof, crc, nil
}

func (sc *serverConn) sendfileOne(id uint32, sf *sendFile, fileOff int64, off, n uint32) error {
	fb := dataFrame(id, off, n)
	if err := sc.lockForWrite(); err != nil {
		return err
	}
	defer sc.wmu.Unlock()
	w, err := sendFileData(sc.c.(*net.TCPConn), fb[:], sf, fileOff, int64(n))
	if err != nil {
		return sc.writeFailed(fmt.Errorf("send to client: %w", err))
	}
	if w != int64(n) {
		return sc.writeFailed(fmt.Errorf("file shrank during the read: sent %d of %d bytes", w, n))
	}
	return nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// crcPiece is how much of a pool buffer preadCRC reads into at a time: a
// piece that stays in the CPU's cache between the copy and the sum.
const crcPiece = 256 << 10

// preadCRC extends crc with file bytes [off, off+n), read through a pool
// buffer (taken for the call, under the connection's share): the bytes are
// copied once into the cache and summed there, while sendfile sends them
// from the page cache. A file that ends early is an error.
func (sc *serverConn) preadCRC(f io.ReaderAt, crc uint32, off, n int64) (uint32, error) {
	select {
	case sc.connBufs <- struct{}{}:
	case <-sc.ctx.Done():
		return 0, errors.New("connection closing")
	}
	defer func() { <-sc.connBufs }()
	buf, err := sc.s.pool.get(sc.ctx)
	if err != nil {
		return 0, errors.New("connection closing")
	}
	defer sc.s.pool.put(buf)
	buf = buf[:min(len(buf), crcPiece)]
	for n > 0 {
		k := int(min(n, int64(len(buf))))
		got, err := f.ReadAt(buf[:k], off)
		if got < k {
			if err == nil || errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("the file shrank while it was read: it ends at offset %d", off+int64(got))
			}
			return 0, err
		}
		crc = crc32c(crc, buf[:k])
		off += int64(k)
		n -= int64(k)
	}
	return crc, nil
}
