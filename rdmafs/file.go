package rdmafs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// File is a remote file opened for reading. It implements io.ReaderAt;
// parallel ReadAt calls are allowed. It is also a loader.Source (ReadAt,
// Name, Size) with the loader's optional ReadAtContext and ReadAtDevice
// capabilities, so it can be loaded by the engine as it is; vfs opens it
// under its rdmafs:// URL. A File holds no server state: there is nothing
// to close.
type File struct {
	cl   *Client
	name string
	info FileInfo
	dm   DeviceMemory // for ReadAtDevice; nil: the client's
}

// Name returns the name the file was opened with.
func (f *File) Name() string { return f.name }

// Size returns the size reported when the file was opened.
func (f *File) Size() int64 { return f.info.size }

// Stat returns the metadata reported when the file was opened.
func (f *File) Stat() FileInfo { return f.info }

// ReadAt reads len(p) bytes at off. It follows io.ReaderAt: when n <
// len(p) the error says why (io.EOF at end of file). Large reads are split
// into chunks pipelined over the client's connections; lost connections are
// retried until the retry deadline. ReadAt does not retain p.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt with a context that cancels the read.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &Error{Op: "read", Name: f.name, Offset: off, Msg: "negative offset", Err: ErrInvalid}
	}
	if len(p) == 0 {
		return 0, nil
	}
	return f.readChunks(len(p), func(lo, hi int) (int, bool, error) {
		return f.readPiece(ctx, p[lo:hi], off+int64(lo))
	})
}

// readChunks reads bytes [0, length) of a request as chunk-sized pieces,
// pipelined over the client's connections: piece(lo, hi) reads one of them.
// It stops starting pieces after the first failure or short piece and
// returns the bytes read contiguously from the start.
func (f *File) readChunks(length int, piece func(lo, hi int) (n int, eof bool, err error)) (int, error) {
	chunk := f.cl.chunkSize()
	if length <= chunk {
		n, eof, err := piece(0, length)
		return finishPiece(n, length, eof, err)
	}
	type result struct {
		n   int
		eof bool
		err error
	}
	pieces := (length + chunk - 1) / chunk
	results := make([]result, pieces)
	sem := make(chan struct{}, f.cl.parallelism())
	var wg sync.WaitGroup
	var failed sync.Once
	stop := make(chan struct{})
	for i := range pieces {
		lo := i * chunk
		hi := min(lo+chunk, length)
		select {
		case sem <- struct{}{}:
		case <-stop:
		}
		select {
		case <-stop:
			// An earlier piece failed: do not start more.
			results[i].err = errSkipped
			continue
		default:
		}
		wg.Go(func() {
			defer func() { <-sem }()
			n, eof, err := piece(lo, hi)
			results[i] = result{n, eof, err}
			if err != nil || n < hi-lo {
				failed.Do(func() { close(stop) })
			}
		})
	}
	wg.Wait()
	total := 0
	for i, r := range results {
		total += r.n
		want := min(chunk, length-i*chunk)
		if r.err != nil || r.n < want {
			return finishPiece(total, length, r.eof, r.err)
		}
	}
	return total, nil
}

var errSkipped = errors.New("piece skipped after an earlier failure")

func finishPiece(n, want int, eof bool, err error) (int, error) {
	switch {
	case err != nil:
		return n, err
	case n < want && eof:
		return n, io.EOF
	case n < want:
		return n, fmt.Errorf("%w: short read of %d bytes without EOF", ErrProtocol, n)
	}
	return n, nil
}

// readPiece reads one chunk (≤ the server's MaxRead) with retries.
func (f *File) readPiece(ctx context.Context, p []byte, off int64) (n int, eof bool, err error) {
	err = f.cl.retry(ctx, func(cc *clientConn) error {
		var e error
		n, eof, e = cc.read(ctx, f.name, p, off, f.cl.cfg.crc)
		return e
	})
	return n, eof, err
}

func (cl *Client) chunkSize() int {
	chunk := cl.cfg.chunk
	if mr := cl.maxRead.Load(); mr > 0 {
		chunk = min(chunk, int(mr))
	}
	return chunk
}

func (cl *Client) parallelism() int { return cl.cfg.conns * cl.cfg.perConn }

// read issues one READ on this connection. With a region transport the
// destination is registered for the request's lifetime and deregistered
// before read returns, so a late server write is refused.
func (cc *clientConn) read(ctx context.Context, name string, p []byte, off int64, wantCRC bool) (int, bool, error) {
	m := wire.Read{Offset: uint64(off), Length: uint32(len(p)), Name: name}
	if wantCRC {
		m.Flags |= wire.ReadCRC
	}
	dst := p
	if cc.regions != nil {
		r, err := cc.regions.Register(p)
		if err != nil {
			return 0, false, &Error{Op: "read", Name: name, Offset: off, Msg: "register destination", Err: err}
		}
		defer cc.regions.Deregister(r)
		m.Flags |= wire.ReadRegion
		m.Region = r
		dst = nil
	}
	d, got, err := cc.readRequest(ctx, m, dst)
	if err != nil {
		return 0, false, err
	}
	if wantCRC {
		if !d.HasCRC {
			return 0, false, &Error{Op: "read", Name: name, Offset: off, Msg: "server sent no CRC32C", Err: ErrProtocol}
		}
		if dst == nil {
			got = crc32c(0, p[:d.N]) // a region write: the bytes were not seen arriving
		}
		if got != d.CRC {
			return 0, false, &Error{Op: "read", Name: name, Offset: off, Err: ErrChecksum,
				Msg: fmt.Sprintf("CRC32C of %d bytes is %08x, server says %08x; the data was corrupted in transit or the file changed", d.N, got, d.CRC)}
		}
	}
	return int(d.N), d.EOF, nil
}

// readRequest sends READ m and waits for its READ_DONE. dst is the stream
// destination (nil when the data goes to a region). It checks that the
// server completed no more than it was asked and, on a stream, exactly
// what it delivered. When m asks for a CRC and the data came on the
// stream, crc is the CRC32C of the bytes received, taken as they arrived.
func (cc *clientConn) readRequest(ctx context.Context, m wire.Read, dst []byte) (d wire.ReadDone, crc uint32, err error) {
	name, off := m.Name, int64(m.Offset)
	c, err := cc.do(ctx, wire.TypeRead, m.Append(nil), &call{buf: dst, sum: dst != nil && m.Flags&wire.ReadCRC != 0})
	if err != nil {
		return wire.ReadDone{}, 0, err
	}
	if err := replyErr(c, wire.TypeReadDone, "read", name, off); err != nil {
		return wire.ReadDone{}, 0, err
	}
	d, err = wire.DecodeReadDone(c.payload)
	if err != nil {
		return wire.ReadDone{}, 0, &Error{Op: "read", Name: name, Offset: off, Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
	}
	if d.N > m.Length || (dst != nil && d.N != c.got) {
		return wire.ReadDone{}, 0, &Error{Op: "read", Name: name, Offset: off, Err: ErrProtocol,
			Msg: fmt.Sprintf("server completed %d bytes but delivered %d of %d asked", d.N, c.got, m.Length)}
	}
	return d, c.crc, nil
}
