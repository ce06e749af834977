package loader

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"sync"
	"time"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/fileops"
)

// SaveSource is a region of memory SaveFile writes to a file. The region
// must not change while it is saved. A SaveSource is one of:
//   - HostSource: host memory the writer reads in place;
//   - DeviceReader: memory the host cannot read (GPU memory), copied into
//     host buffers chunk by chunk (the bounce path);
//   - FileWriterSource: memory that writes itself to a file descriptor
//     (cuFileWrite, the gds path), preferred when the file takes O_DIRECT.
type SaveSource interface {
	// Size is the number of bytes of the region.
	Size() int64
}

// HostSource is a SaveSource in host memory.
type HostSource interface {
	SaveSource
	// Bytes returns the region; SaveFile only reads it.
	Bytes() []byte
}

// DeviceReader is a SaveSource whose memory the host cannot read directly.
// ReadBack copies region bytes [off, off+len(p)) into p and returns once
// they are there, like ReadBacker of a GPU destination. SaveFile calls it
// from one goroutine, in order, while earlier chunks are being written.
type DeviceReader interface {
	SaveSource
	ReadBack(ctx context.Context, off int64, p []byte) error
}

// FileWriterSource is an optional capability of a SaveSource that writes
// its bytes to a file itself, without host memory in between (the gds
// path: cuFileWrite from GPU memory). WriteToFile writes region bytes
// [srcOff, srcOff+n) at file offset fileOff of the O_DIRECT descriptor fd
// and returns the number of bytes written; SaveFile calls it from many
// goroutines at once, with fileOff and srcOff multiples of the file's
// direct-I/O alignment. When the source is also a DeviceReader, n is a
// multiple of the alignment too, and SaveFile writes an unaligned tail
// itself from a padded host buffer.
type FileWriterSource interface {
	SaveSource
	WriteToFile(ctx context.Context, fd uintptr, fileOff, srcOff, n int64) (int64, error)
}

// FileReleaser is an optional capability of a FileWriterSource that keeps
// state for a file descriptor it wrote through (a cuFile handle registered
// on it). SaveFile calls ReleaseFile(fd) once the writes through fd are
// done, before it closes fd: cuFile wants a handle deregistered before its
// descriptor is closed.
type FileReleaser interface {
	ReleaseFile(fd uintptr)
}

// HostPinner is an optional capability of a DeviceReader: PinHost
// page-locks host memory that ReadBack will copy into (cudaHostRegister),
// so the device-to-host copies of a save run at pinned-memory speed.
// SaveFile pins its bounce buffers once per save and calls unpin at the end.
type HostPinner interface {
	PinHost(mem []byte) (unpin func(), err error)
}

// HostMemory wraps b as a HostSource.
func HostMemory(b []byte) HostSource { return hostMemory(b) }

type hostMemory []byte

func (h hostMemory) Size() int64   { return int64(len(h)) }
func (h hostMemory) Bytes() []byte { return h }

// SaveOptions tune SaveFile. The zero value is usable.
type SaveOptions struct {
	// Direct selects O_DIRECT writes: auto (default) where the file
	// system takes them, on, or off.
	Direct DirectMode
	// ChunkSize is the largest single write (default 4 MiB), rounded up
	// to the file's direct-I/O alignment.
	ChunkSize int64
	// Workers is the number of concurrent writes (default 4).
	Workers int
	// Checksum, if set, is computed over the bytes as written and returned
	// in the result; for the gds path, by reading the file back.
	Checksum Checksum

	// fs is the file system written through (nil: the operating
	// system's); tests wrap it to inject faults and observe the order of
	// writes, syncs and renames.
	fs fileops.FS
}

// SaveResult describes a finished save.
type SaveResult struct {
	Path    string  `json:"path"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	GiBPerS float64 `json:"gib_per_s"`
	// Route is the data path: gds, bounce or host.
	Route Route `json:"route"`
	// GDSMode is cuFile's mode when Route is gds.
	GDSMode cufile.Mode `json:"gds_mode,omitempty"`
	Direct  bool        `json:"direct"`
	Reason  string      `json:"reason"`
	Digest  string      `json:"digest,omitempty"`
}

// SaveFile writes src to path atomically: into a temporary file in path's
// directory (preallocated, written with O_DIRECT where possible), fsynced,
// renamed over path, and the directory fsynced. Readers see the old file or
// the whole new one; on any error or cancellation the temporary file is
// removed and path is untouched. A full destination is a *NoSpaceError.
func SaveFile(ctx context.Context, path string, src SaveSource, opts SaveOptions) (*SaveResult, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Checksum == "" {
		opts.Checksum = ChecksumNone
	}
	start := time.Now()
	if opts.fs == nil {
		opts.fs = fileops.Default()
	}
	out, err := durable.CreateAtomicFS(opts.fs, path, src.Size(), durable.DirectMode(opts.Direct))
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	opts.ChunkSize = alignUp(opts.ChunkSize, max(out.Alignment(), DefaultAlignment))
	s := &saver{out: out, src: src, opts: opts}
	if opts.Checksum != ChecksumNone {
		s.h = opts.Checksum.newHash()
	}
	if err := s.run(ctx); err != nil {
		return nil, &Error{Op: "save", Name: path, Offset: -1, Err: err}
	}
	if err := out.Sync(); err != nil {
		return nil, err
	}
	r := &SaveResult{Path: path, Bytes: src.Size(), Route: s.route, Direct: out.Direct(), Reason: out.DirectReason()}
	if m, ok := src.(cuFileModer); ok && s.route == RouteGDS {
		r.GDSMode = m.CuFileMode()
	}
	if s.h != nil {
		r.Digest = digestHex(s.h)
	} else if opts.Checksum != ChecksumNone {
		if r.Digest, err = fileDigest(ctx, out.TempPath(), opts.Checksum); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := out.Publish(); err != nil {
		return nil, err
	}
	r.Seconds = time.Since(start).Seconds()
	if r.Seconds > 0 {
		r.GiBPerS = float64(r.Bytes) / gib / r.Seconds
	}
	return r, nil
}

// saver cuts the region into chunks that a pool of writers writes at the
// same offsets into the file.
type saver struct {
	out   *durable.AtomicFile
	src   SaveSource
	opts  SaveOptions
	h     hash.Hash // nil: no digest, or the gds path digests the file
	route Route
}

// chunk is one write: buf at file offset off; release returns its memory.
type chunk struct {
	off     int64
	buf     []byte
	release func()
}

func (s *saver) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if fw, ok := s.src.(FileWriterSource); ok && s.out.Direct() {
		s.route, s.h = RouteGDS, nil
		if r, ok := fw.(FileReleaser); ok {
			defer r.ReleaseFile(s.out.Fd())
		}
		return s.writeItself(ctx, fw)
	}
	host, isHost := s.src.(HostSource)
	dev, isDev := s.src.(DeviceReader)
	switch {
	case isHost:
		s.route = RouteHost
	case isDev:
		s.route = RouteBounce
		if r, ok := s.src.(*regions); ok && r.hostOnly() {
			s.route = RouteHost // copied from host memory, no device involved
		}
	default:
		return errors.New("the source is neither host memory, a DeviceReader nor a FileWriterSource")
	}

	// Host memory is written in place where direct I/O allows it; device
	// memory and unaligned edges go through a small pool of aligned
	// buffers, so copies overlap with writes. Buffered writes of host
	// memory are always in place (a file never turns direct again), and no
	// pool is larger than the source needs.
	var free chan []byte
	if size := s.src.Size(); size > 0 && (!isHost || s.out.Direct()) {
		cs := s.opts.ChunkSize
		bufSize := min(cs, alignUp(size, s.out.Alignment())) // cs is a multiple of the alignment
		nbuf := int(min(int64(s.opts.Workers+2), (size+cs-1)/cs))
		pool, err := AllocHost(nbuf * int(bufSize))
		if err != nil {
			return err
		}
		defer FreeHost(pool)
		if p, ok := s.src.(HostPinner); ok && isDev {
			// Pinning only speeds the copies up: a refusal is not an error.
			if unpin, err := p.PinHost(pool); err == nil {
				defer unpin()
			}
		}
		free = make(chan []byte, nbuf)
		for i := range nbuf {
			free <- pool[i*int(bufSize) : (i+1)*int(bufSize)]
		}
	}
	work := make(chan chunk)
	var wg sync.WaitGroup
	for range s.opts.Workers {
		wg.Go(func() {
			for c := range work {
				if err := s.out.WriteAt(c.buf, c.off); err != nil {
					cancel(err)
				}
				c.release()
			}
		})
	}
	err := s.produce(ctx, host, dev, isHost, free, work)
	close(work)
	wg.Wait()
	if err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// produce hands out the chunks in order, hashing them as they go.
func (s *saver) produce(ctx context.Context, host HostSource, dev DeviceReader, isHost bool, free chan []byte, work chan<- chunk) error {
	size, cs := s.src.Size(), s.opts.ChunkSize
	align := s.out.Alignment()
	var mem []byte
	if isHost {
		mem = host.Bytes()
		if int64(len(mem)) != size {
			return fmt.Errorf("host source of %d bytes reports size %d", len(mem), size)
		}
	}
	for off := int64(0); off < size; off += cs {
		n := min(cs, size-off)
		c := chunk{off: off, release: func() {}}
		inPlace := isHost && (!s.out.Direct() || n%align == 0 && addrOf(mem[off:off+n])%uintptr(s.out.MemAlignment()) == 0)
		if inPlace {
			c.buf = mem[off : off+n]
		} else {
			var b []byte
			select {
			case b = <-free:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			c.release = func() { free <- b }
			if isHost {
				copy(b, mem[off:off+n])
			} else if err := dev.ReadBack(ctx, off, b[:n]); err != nil {
				c.release()
				return fmt.Errorf("copying bytes [%d, %d) from the device: %w", off, off+n, err)
			}
			padded := alignUp(n, align)
			clear(b[n:padded])
			c.buf = b[:padded]
		}
		if s.h != nil {
			s.h.Write(c.buf[:n])
		}
		select {
		case work <- c:
		case <-ctx.Done():
			c.release()
			return context.Cause(ctx)
		}
	}
	return nil
}

// writeItself has the source write its aligned body to the file (gds); an
// unaligned tail goes through an aligned host buffer when the source can be
// read back, since direct writes need whole blocks and the device region
// has no padding to write.
func (s *saver) writeItself(ctx context.Context, fw FileWriterSource) error {
	size, align := s.src.Size(), s.out.Alignment()
	body := size
	dev, canRead := s.src.(DeviceReader)
	if canRead {
		body = size / align * align
	}
	err := s.parallel(ctx, body, func(off, n int64) error {
		got, err := fw.WriteToFile(ctx, s.out.Fd(), off, off, n)
		if err == nil && got != n {
			err = fmt.Errorf("wrote %d of %d bytes", got, n)
		}
		if err != nil {
			return fmt.Errorf("writing bytes [%d, %d) from the device: %w", off, off+n, err)
		}
		return nil
	})
	if err != nil || body == size {
		return err
	}
	buf, err := AllocHost(int(align))
	if err != nil {
		return err
	}
	defer FreeHost(buf)
	if err := dev.ReadBack(ctx, body, buf[:size-body]); err != nil {
		return fmt.Errorf("copying bytes [%d, %d) from the device: %w", body, size, err)
	}
	return s.out.WriteAt(buf, body)
}

// parallel calls write for every chunk of the first size bytes of the
// region from Workers goroutines.
func (s *saver) parallel(ctx context.Context, size int64, write func(off, n int64) error) error {
	cs := s.opts.ChunkSize
	offs := make(chan int64)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range s.opts.Workers {
		wg.Go(func() {
			for off := range offs {
				if err := write(off, min(cs, size-off)); err != nil {
					once.Do(func() { first = err })
					cancel()
				}
			}
		})
	}
feed:
	for off := int64(0); off < size; off += cs {
		select {
		case offs <- off:
		case <-ctx.Done():
			break feed
		}
	}
	close(offs)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// fileDigest reads path back (O_DIRECT where possible) and digests it.
func fileDigest(ctx context.Context, path string, c Checksum) (string, error) {
	f, err := OpenFile(path, DirectAuto)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf, err := AllocHost(4 << 20)
	if err != nil {
		return "", err
	}
	defer FreeHost(buf)
	d, err := DigestSource(ctx, f, c, buf)
	if err != nil {
		return "", fmt.Errorf("reading back %s: %w", filepath.Base(path), err)
	}
	return d, nil
}

// DigestSource reads all of src in order through buf and returns its digest
// under c, in the form FileResult reports it.
func DigestSource(ctx context.Context, src Source, c Checksum, buf []byte) (string, error) {
	h := c.newHash()
	if h == nil {
		return "", fmt.Errorf("checksum %q: want sha256 or crc32c", c)
	}
	size := src.Size()
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return "", context.Cause(ctx)
		}
		n := min(int64(len(buf)), size-off)
		got, err := src.ReadAt(buf[:n], off)
		if int64(got) == n {
			err = nil
		}
		if err != nil {
			return "", fmt.Errorf("at offset %d: %w", off+int64(got), err)
		}
		h.Write(buf[:n])
		off += n
	}
	return digestHex(h), nil
}
