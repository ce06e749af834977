package rdmafs

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// canSendfile reports whether a READ can skip the buffer pool: on a TCP
// stream the kernel sends file pages straight to the socket (sendfile),
// with no copy in user space.
//
// A CRC32C, when asked for, comes from the server's digest cache for the
// whole 1 MiB blocks it has summed before, and is computed for the rest
// over the same page-cache pages through a read-only mapping of the file,
// one piece ahead of its sendfile: the bytes are read once by the CPU,
// the first time, and never copied in user space.
func (sc *serverConn) canSendfile(_ wire.Read, region bool) bool {
	_, tcp := sc.c.(*net.TCPConn)
	return tcp && !region
}

// sendfilePieces serves a READ with sendfile(2) in BufferSize pieces. The
// piece sizes are fixed from fi, the file as it was at open; if the file
// shrinks under the server the stream can no longer be trusted, so the
// connection is dropped (the client retries the idempotent read on a new
// one).
func (sc *serverConn) sendfilePieces(id uint32, f *os.File, fi os.FileInfo, name string, m wire.Read) (sent uint32, eof bool, crc uint32, rerr *requestError) {
	size := fi.Size()
	end := int64(m.Offset) + int64(m.Length)
	if end > size {
		end, eof = max(size, int64(m.Offset)), true
	}
	total := uint32(end - int64(m.Offset))
	if total == 0 {
		return 0, eof, 0, nil
	}
	if _, err := f.Seek(int64(m.Offset), io.SeekStart); err != nil {
		return 0, false, 0, refuse(wire.CodeIO, "read %s: seek: %v", name, err)
	}
	wantCRC := m.Flags&wire.ReadCRC != 0
	var fd *fileDigests
	if wantCRC {
		fd = sc.s.digests.lookup(fi)
	}
	compute := func(crc uint32, off, n int64) (uint32, error) { return mappedCRC(f, crc, off, n) }
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
		if err := sc.sendfileOne(id, f, sent, n); err != nil {
			return sent, false, 0, refuse(wire.CodeShuttingDown, "read %s: %v", name, err)
		}
		sent += n
		sc.s.metrics.bytesSent.Add(uint64(n))
	}
	return sent, eof, crc, nil
}

func (sc *serverConn) sendfileOne(id uint32, f *os.File, off, n uint32) error {
	fb := dataFrame(id, off, n)
	if err := sc.lockForWrite(); err != nil {
		return err
	}
	defer sc.wmu.Unlock()
	if _, err := sc.c.Write(fb[:]); err != nil {
		return sc.writeFailed(fmt.Errorf("write to client: %w", err))
	}
	w, err := sc.c.(*net.TCPConn).ReadFrom(io.LimitReader(f, int64(n)))
	if err == nil && w != int64(n) {
		err = fmt.Errorf("file shrank during the read: sent %d of %d bytes", w, n)
	}
	if err != nil {
		return sc.writeFailed(err)
	}
	return nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// mappedCRC extends crc with file bytes [off, off+n), read through a
// read-only mapping of the file's page cache: one pass over the bytes and
// no copy. A file truncated under the mapping faults (SIGBUS) instead of
// reading short: that fault becomes an error.
func mappedCRC(f *os.File, crc uint32, off, n int64) (out uint32, err error) {
	if n == 0 {
		return crc, nil
	}
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	mem, err := unix.Mmap(int(f.Fd()), start, int(off-start+n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, fmt.Errorf("mapping the file to sum it: %w", err)
	}
	defer unix.Munmap(mem)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the file shrank while it was read (%v)", r)
		}
	}()
	return crc32c(crc, mem[off-start:]), nil
}
