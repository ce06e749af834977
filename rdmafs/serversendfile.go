package rdmafs

import (
	"fmt"
	"io"
	"net"
	"os"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// canSendfile reports whether a READ can skip the buffer pool: on a TCP
// stream, without a CRC (which needs the bytes in user memory), the kernel
// copies file pages straight to the socket (sendfile).
func (sc *serverConn) canSendfile(m wire.Read, region bool) bool {
	_, tcp := sc.c.(*net.TCPConn)
	return tcp && !region && m.Flags&wire.ReadCRC == 0
}

// sendfilePieces serves a READ with sendfile(2) in BufferSize pieces. The
// piece sizes are fixed from size, the file's size at open; if the file shrinks under the
// server the stream can no longer be trusted, so the connection is dropped
// (the client retries the idempotent read on a new one).
func (sc *serverConn) sendfilePieces(id uint32, f *os.File, size int64, name string, m wire.Read) (sent uint32, eof bool, rerr *requestError) {
	end := int64(m.Offset) + int64(m.Length)
	if end > size {
		end, eof = max(size, int64(m.Offset)), true
	}
	total := uint32(end - int64(m.Offset))
	if _, err := f.Seek(int64(m.Offset), io.SeekStart); err != nil && total > 0 {
		return 0, false, refuse(wire.CodeIO, "read %s: seek: %v", name, err)
	}
	for sent < total {
		n := min(total-sent, uint32(sc.s.cfg.BufferSize))
		if err := sc.sendfileOne(id, f, sent, n); err != nil {
			return sent, false, refuse(wire.CodeShuttingDown, "read %s: %v", name, err)
		}
		sent += n
		sc.s.metrics.bytesSent.Add(uint64(n))
	}
	return sent, eof, nil
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
