package rdmafs

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// infoOf is what STAT_OK or a LIST_OK entry says of fi. With withID
// (the client was granted wire.FlagFileID) it adds the change time, device
// and inode, taken with the size and times from the one stat call behind
// fi, so the pair a client compares (at open, after its load) is two
// snapshots, each of one moment.
func infoOf(fi os.FileInfo, withName, withID bool) wire.FileInfo {
	w := wire.FileInfo{Size: uint64(max(fi.Size(), 0)), Mtime: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode())}
	if withName {
		w.Name = fi.Name()
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && withID {
		w.HasID = true
		w.Ctime = st.Ctim.Nano()
		w.Dev, w.Ino = uint64(st.Dev), st.Ino
	}
	return w
}

// fileID reports whether this connection's replies carry file identities.
func (sc *serverConn) fileID() bool { return sc.flags&wire.FlagFileID != 0 }

func (sc *serverConn) done(op int, start time.Time) {
	sc.s.metrics.requests[op].Add(1)
	sc.s.metrics.latency[op].observe(time.Since(start))
}

func (sc *serverConn) reply(id uint32, e *requestError) {
	sc.log.Debug("rdmafs request refused", "id", id, "code", e.code.String(), "msg", e.msg)
	sc.sendError(id, e.code, e.msg)
}

func (sc *serverConn) handleStat(id uint32, m wire.Stat) {
	defer sc.done(opStat, time.Now())
	name, rerr := checkName(m.Name, true)
	if rerr != nil {
		sc.reply(id, rerr)
		return
	}
	fi, err := sc.s.root.Stat(name)
	if err != nil {
		sc.reply(id, fsError("stat", name, err))
		return
	}
	_ = sc.sendMsg(wire.TypeStatOK, id, infoOf(fi, false, sc.fileID()).Append(nil))
}

func (sc *serverConn) handleList(id uint32, m wire.List) {
	defer sc.done(opList, time.Now())
	name, rerr := checkName(m.Name, true)
	if rerr != nil {
		sc.reply(id, rerr)
		return
	}
	d, rerr := sc.open("list", name)
	if rerr != nil {
		sc.reply(id, rerr)
		return
	}
	defer d.Close()
	if fi, err := d.Stat(); err == nil && !fi.IsDir() {
		sc.reply(id, refuse(wire.CodeNotDir, "list %s: not a directory", name))
		return
	}
	ents, err := d.ReadDir(-1)
	if err != nil {
		sc.reply(id, fsError("list", name, err))
		return
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := wire.ListOK{Next: m.Cursor, HasID: sc.fileID()}
	size := wire.ListHeaderSize
	for i := int(m.Cursor); i < len(ents); i++ {
		fi, err := ents[i].Info()
		if err != nil {
			continue // removed since ReadDir
		}
		es := wire.ListEntrySize(fi.Name())
		if out.HasID {
			es += wire.FileIDSize
		}
		if size+es > wire.MaxPayload || len(out.Entries) == 0xffff {
			out.More = true
			break
		}
		size += es
		out.Entries = append(out.Entries, infoOf(fi, true, out.HasID))
		out.Next = uint32(i + 1)
	}
	_ = sc.sendMsg(wire.TypeListOK, id, out.Append(make([]byte, 0, size)))
}

// open opens name beneath the export root for op. O_NONBLOCK keeps a FIFO
// planted in the export from blocking the open (a LIST or READ of it is
// then refused by its caller); reads of files and directories ignore it.
func (sc *serverConn) open(op, name string) (*os.File, *requestError) {
	f, err := sc.s.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError(op, name, err)
	}
	return f, nil
}

// openRegular opens a regular file for reading and returns what fstat
// said of it at open; anything else is refused.
func (sc *serverConn) openRegular(name string) (*os.File, os.FileInfo, *requestError) {
	f, rerr := sc.open("read", name)
	if rerr != nil {
		return nil, nil, rerr
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError("read", name, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, refuse(wire.CodeIsDir, "read %s: is a directory", name)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, refuse(wire.CodeNotRegular, "read %s: not a regular file (%s)", name, fi.Mode().Type())
	}
	return f, fi, nil
}

func (sc *serverConn) handleRead(id uint32, m wire.Read) {
	defer sc.done(opRead, time.Now())
	name, rerr := checkName(m.Name, false)
	if rerr != nil {
		sc.reply(id, rerr)
		return
	}
	if int64(m.Length) > int64(sc.s.cfg.MaxRead) {
		sc.reply(id, refuse(wire.CodeTooLarge, "read %s: length %d over the server's limit of %d (split the read)", name, m.Length, sc.s.cfg.MaxRead))
		return
	}
	if m.Offset > 1<<62 {
		sc.reply(id, refuse(wire.CodeInvalid, "read %s: offset %d out of range", name, m.Offset))
		return
	}
	region := m.Flags&wire.ReadRegion != 0
	if region && sc.regions == nil {
		sc.reply(id, refuse(wire.CodeInvalid, "read %s: destination region given on the %s stream transport", name, sc.c.LocalAddr().Network()))
		return
	}
	if region && m.Region.Len < uint64(m.Length) {
		sc.reply(id, refuse(wire.CodeRegion, "read %s: region of %d bytes is smaller than the %d asked", name, m.Region.Len, m.Length))
		return
	}
	var sent, crc uint32
	var eof bool
	if sc.canSendfile(m, region) {
		var sf *sendFile
		if sf, rerr = sc.openSendFile(name); rerr != nil {
			sc.reply(id, rerr)
			return
		}
		defer sf.close()
		sent, eof, crc, rerr = sc.sendfilePieces(id, sf, name, m)
	} else {
		var f *os.File
		if f, _, rerr = sc.openRegular(name); rerr != nil {
			sc.reply(id, rerr)
			return
		}
		defer f.Close()
		sent, eof, crc, rerr = sc.readPieces(id, f, name, m, region)
	}
	if rerr != nil {
		sc.reply(id, rerr)
		return
	}
	done := wire.ReadDone{N: sent, EOF: eof, HasCRC: m.Flags&wire.ReadCRC != 0, CRC: crc}
	_ = sc.sendMsg(wire.TypeReadDone, id, done.Append(nil))
}

// readPieces serves a READ in pool-buffer pieces: read from storage into a
// pool buffer, deliver it (stream or region), return the buffer. A
// connection holds at most ConnBuffers buffers, so one slow client cannot
// drain the pool.
func (sc *serverConn) readPieces(id uint32, f *os.File, name string, m wire.Read, region bool) (sent uint32, eof bool, crc uint32, rerr *requestError) {
	wantCRC := m.Flags&wire.ReadCRC != 0
	for sent < m.Length {
		select {
		case sc.connBufs <- struct{}{}:
		case <-sc.ctx.Done():
			return sent, false, 0, refuse(wire.CodeShuttingDown, "connection closing")
		}
		buf, err := sc.s.pool.get(sc.ctx)
		if err != nil {
			<-sc.connBufs
			return sent, false, 0, refuse(wire.CodeShuttingDown, "connection closing")
		}
		n, rdErr := f.ReadAt(buf[:min(int(m.Length-sent), len(buf))], int64(m.Offset)+int64(sent))
		var dErr error
		if n > 0 {
			if wantCRC {
				crc = crc32c(crc, buf[:n])
			}
			dErr = sc.deliver(id, m, sent, buf[:n], region)
		}
		sc.s.pool.put(buf)
		<-sc.connBufs
		if dErr != nil {
			if errors.Is(dErr, ErrRegion) {
				return sent, false, 0, refuse(wire.CodeRegion, "read %s: %v", name, dErr)
			}
			return sent, false, 0, refuse(wire.CodeShuttingDown, "read %s: delivery failed: %v", name, dErr)
		}
		sent += uint32(n)
		sc.s.metrics.bytesSent.Add(uint64(n))
		if rdErr == io.EOF {
			return sent, true, crc, nil
		}
		if rdErr != nil {
			return sent, false, 0, refuse(wire.CodeIO, "read %s at offset %d: %v", name, int64(m.Offset)+int64(sent), errors.Unwrap(rdErr))
		}
	}
	return sent, false, crc, nil
}

// deliver moves one piece to the client: on the stream after a DATA frame,
// or by a region write.
func (sc *serverConn) deliver(id uint32, m wire.Read, off uint32, p []byte, region bool) error {
	if region {
		return sc.regions.WriteRegion(m.Region, uint64(off), p)
	}
	fb := dataFrame(id, off, uint32(len(p)))
	return sc.send(fb[:], p)
}

// dataFrame is the DATA frame announcing n bytes at off of request id.
func dataFrame(id, off, n uint32) [wire.HeaderSize + 8]byte {
	var fb [wire.HeaderSize + 8]byte
	wire.PutHeader(fb[:], wire.Header{Type: wire.TypeData, ID: id, Length: 8})
	wire.Data{Offset: off, N: n}.Append(fb[:wire.HeaderSize])
	return fb
}
