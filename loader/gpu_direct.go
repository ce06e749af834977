package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gdsload/gdsload/cufile"
	"golang.org/x/sys/unix"
)

// GPUDirectConfig describes a destination that cuFile reads into.
type GPUDirectConfig struct {
	GPUConfig
	// Driver is the cuFile driver; the destination holds a reference to
	// it (Open) until Close. Required.
	Driver *cufile.Driver
	// FileOffset is the file offset whose byte lands at destination
	// offset 0 (the data region of a safetensors file, say). Device
	// addresses are shifted to share its alignment, so reads stay on
	// cuFile's aligned fast path; 0 suits whole files.
	FileOffset int64
}

// GPUDirect is a Destination in GPU memory that reads files itself with
// cuFileRead (the gds path). It implements FileReaderDestination, Sized
// and ReadBacker. Sources that offer no O_DIRECT descriptor go through a
// pinned bounce ring created on first need. ReadFromFile may be called
// from many goroutines. It is reused across loads until Close.
type GPUDirect struct {
	cfg GPUDirectConfig
	gpuView
	registered bool        // the device buffer is registered with cuFile
	mode       cufile.Mode // cuFile's mode, "" when unknown

	*lazyRing // for sources without a descriptor: Span, Flush, ReadBack

	mu      sync.Mutex
	handles map[uintptr]*cachedHandle
	refused map[string]string // source name: why cuFile would not register it
}

// Route is RouteGDS. A file without an O_DIRECT descriptor still goes
// through pinned memory, and the load's result says so for that file.
func (g *GPUDirect) Route() Route { return RouteGDS }

// cachedHandle is a registered descriptor and the file it named, so a
// reused descriptor number is never read through a stale handle.
type cachedHandle struct {
	h        *cufile.FileHandle
	dev, ino uint64
}

// alignShift is the alignment device addresses are shifted to.
const alignShift = 4096

// NewGPUDirectDestination opens a reference to the cuFile driver,
// allocates the device memory (checked against free memory first) and
// registers it with cuFileBufRegister when it fits the library's pinned
// memory limit.
func NewGPUDirectDestination(cfg GPUDirectConfig) (_ *GPUDirect, err error) {
	if cfg.Driver == nil {
		return nil, errors.New("gds destination: no cuFile driver")
	}
	cfg.GPUConfig = cfg.GPUConfig.withDefaults()
	if err := cfg.Driver.Open(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cfg.Driver.Close()
		}
	}()
	mem, err := allocGPU(cfg.Device, cfg.Size, cfg.FileOffset%alignShift)
	if err != nil {
		return nil, err
	}
	g := &GPUDirect{cfg: cfg, gpuView: gpuView{mem}, handles: map[uintptr]*cachedHandle{},
		lazyRing: &lazyRing{gpu: mem, buffers: cfg.Buffers, chunk: cfg.ChunkSize}}
	if mode, _, err := cfg.Driver.Mode(); err == nil {
		g.mode = mode
	}
	if props, perr := cfg.Driver.Properties(); perr == nil && props.MaxPinnedMemKiB*1024 >= mem.size+mem.shift {
		// One registration for the whole buffer: reads then skip
		// cuFile's per-call pinning. Failure only costs speed.
		g.registered = cfg.Device.Do(func() error {
			return cfg.Driver.RegisterBuffer(mem.base, mem.size+mem.shift)
		}) == nil
	}
	return g, nil
}

// Registered reports whether the device buffer is registered with cuFile.
func (g *GPUDirect) Registered() bool { return g.registered }

// CuFileMode is the mode cuFile reads and writes in (p2pdma, nvfs, or
// compat, its POSIX fallback), "" when the driver would not say.
func (g *GPUDirect) CuFileMode() cufile.Mode { return g.mode }

// cuFileModer is a destination or source that moves bytes with cuFile and
// knows the mode it runs in; results record it.
type cuFileModer interface {
	CuFileMode() cufile.Mode
}

// ReadFromFile reads n bytes at file offset fileOff of src into
// destination offset dstOff with cuFileRead, repeating on partial
// transfers; it returns fewer than n bytes only at end of file. A source
// without O_DIRECT is read into a pinned buffer and copied instead.
func (g *GPUDirect) ReadFromFile(ctx context.Context, src FileDescriptorSource, fileOff, dstOff, n int64) (int64, error) {
	if err := g.mem.check(dstOff, n); err != nil {
		return 0, err
	}
	if !src.Direct() {
		return g.readBounce(ctx, src, fileOff, dstOff, n)
	}
	h, err := g.handle(src)
	var reg *registerError
	if errors.As(err, &reg) {
		// cuFile refuses the file (NVIDIA's libcufile does on tmpfs, whose
		// volume udev does not know): it goes through pinned memory, and
		// the result says why.
		g.mu.Lock()
		if g.refused == nil {
			g.refused = map[string]string{}
		}
		if _, ok := g.refused[src.Name()]; !ok {
			g.refused[src.Name()] = reg.Error()
		}
		g.mu.Unlock()
		return g.readBounce(ctx, src, fileOff, dstOff, n)
	}
	if err != nil {
		return 0, err
	}
	return g.transfer(ctx, "into", fileOff, dstOff, n, true, func(k, f, d int64) (int64, error) {
		return h.Read(g.mem.base, k, f, g.mem.shift+d)
	})
}

// registerError is cuFileHandleRegister refusing a file.
type registerError struct{ err error }

func (e *registerError) Error() string { return e.err.Error() }
func (e *registerError) Unwrap() error { return e.err }

// Refused says why cuFile would not register the file of source name, so
// that its reads bounced through pinned memory; "" when it did.
func (g *GPUDirect) Refused(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[name]
}

// handle returns src's registered cuFile handle, registering it once.
func (g *GPUDirect) handle(src FileDescriptorSource) (*cufile.FileHandle, error) {
	h, err := g.handleFd(src.Fd())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	return h, nil
}

// handleFd returns the registered cuFile handle of descriptor fd,
// registering it once per file the descriptor names.
func (g *GPUDirect) handleFd(fd uintptr) (*cufile.FileHandle, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		return nil, fmt.Errorf("fstat: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.handles[fd]; ok {
		if c.dev == uint64(st.Dev) && c.ino == st.Ino {
			return c.h, nil
		}
		c.h.Close() // the descriptor now names another file
		delete(g.handles, fd)
	}
	h, err := g.cfg.Driver.RegisterFile(int(fd))
	if err != nil {
		return nil, &registerError{err}
	}
	g.handles[fd] = &cachedHandle{h: h, dev: uint64(st.Dev), ino: st.Ino}
	return h, nil
}

// WriteToFile writes device bytes [srcOff, srcOff+n) at file offset fileOff
// of the O_DIRECT descriptor fd with cuFileWrite (the gds path of
// SaveFile), repeating on partial transfers.
func (g *GPUDirect) WriteToFile(ctx context.Context, fd uintptr, fileOff, srcOff, n int64) (int64, error) {
	if err := g.mem.check(srcOff, n); err != nil {
		return 0, err
	}
	h, err := g.handleFd(fd)
	if err != nil {
		return 0, err
	}
	return g.transfer(ctx, "from", fileOff, srcOff, n, false, func(k, f, d int64) (int64, error) {
		return h.Write(g.mem.base, k, f, g.mem.shift+d)
	})
}

// ReleaseFile deregisters the cuFile handle of descriptor fd, if any, so
// that fd can be closed (SaveFile calls it before it closes a file it
// wrote with WriteToFile). A later read or write through fd registers it
// again.
func (g *GPUDirect) ReleaseFile(fd uintptr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.handles[fd]; ok {
		c.h.Close()
		delete(g.handles, fd)
	}
}

// transfer repeats one cuFile call (op: a read or a write of k bytes at file
// offset f and destination offset d) until n bytes moved, on a thread whose
// current CUDA context is the destination's device, as cuFile requires. A
// call that moves nothing ends a read (end of file) and fails a write.
func (g *GPUDirect) transfer(ctx context.Context, dir string, fileOff, devOff, n int64, zeroIsEOF bool, op func(k, f, d int64) (int64, error)) (int64, error) {
	var done int64
	err := g.mem.dev.Do(func() error {
		for done < n {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			got, err := op(n-done, fileOff+done, devOff+done)
			if err != nil {
				return fmt.Errorf("%s %s offset %d: %w", dir, g.mem.kind(), devOff+done, err)
			}
			if got == 0 {
				if zeroIsEOF {
					return nil
				}
				return fmt.Errorf("cuFileWrite wrote nothing at file offset %d", fileOff+done)
			}
			done += got
		}
		return nil
	})
	return done, err
}

// readBounce lands a chunk of a buffered source through the pinned ring.
func (g *GPUDirect) readBounce(ctx context.Context, src Source, fileOff, dstOff, n int64) (int64, error) {
	s, err := g.Span(ctx, dstOff, n)
	if err != nil {
		return 0, err
	}
	got, err := src.ReadAt(s.Buf, fileOff)
	if err != nil && !(got == len(s.Buf) && errors.Is(err, io.EOF)) {
		s.Abort()
		return int64(got), err
	}
	if err := s.Commit(ctx); err != nil {
		return 0, err
	}
	return int64(got), nil
}

// Settle deregisters the file handles and frees the pinned buffers,
// keeping the device memory and its cuFile registration
// (GPUDestination.Settle).
func (g *GPUDirect) Settle() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.settleLocked()
}

func (g *GPUDirect) settleLocked() error {
	for fd, c := range g.handles {
		c.h.Close()
		delete(g.handles, fd)
	}
	return g.settle()
}

// Close deregisters the file handles and the buffer, frees the memory and
// drops the driver reference. Sources must stay open until Close or
// Settle.
func (g *GPUDirect) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	errs := []error{g.settleLocked()}
	if g.registered {
		// cuFile deregisters in the context the buffer belongs to.
		errs = append(errs, g.mem.dev.Do(func() error { return g.cfg.Driver.DeregisterBuffer(g.mem.base) }))
	}
	errs = append(errs, g.mem.free(), g.cfg.Driver.Close())
	return errors.Join(errs...)
}
