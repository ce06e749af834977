package loader

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/uring"
)

// DirectMode says whether local files are read with O_DIRECT.
type DirectMode int

// Direct I/O modes.
const (
	// DirectAuto uses O_DIRECT where the file system accepts it and falls
	// back to buffered reads, recording why, where it does not.
	DirectAuto DirectMode = iota
	// DirectOn requires O_DIRECT; opening fails where it is refused.
	DirectOn
	// DirectOff always reads through the page cache.
	DirectOff
)

// ParseDirectMode maps "auto", "on" and "off" to a DirectMode.
func ParseDirectMode(s string) (DirectMode, error) {
	switch s {
	case "auto", "":
		return DirectAuto, nil
	case "on", "true":
		return DirectOn, nil
	case "off", "false":
		return DirectOff, nil
	}
	return DirectAuto, fmt.Errorf("direct mode %q: want auto, on or off", s)
}

func (m DirectMode) String() string {
	switch m {
	case DirectOn:
		return "on"
	case DirectOff:
		return "off"
	}
	return "auto"
}

// DefaultAlignment is the direct-I/O alignment assumed where the kernel does
// not report one through statx(STATX_DIOALIGN).
const DefaultAlignment = durable.DefaultAlignment

// ErrChanged reports a source that changed while it was being loaded:
// truncated, extended, rewritten or replaced.
var ErrChanged = errors.New("file changed during the load")

// ErrDirectRefused reports O_DIRECT required (DirectOn) where the file
// system or platform refuses it; DirectAuto falls back instead.
var ErrDirectRefused = durable.ErrDirectRefused

// NoSpaceError reports a destination file system without room for what a
// write still needed: Dir (the destination directory), Needed (bytes still
// to write when the space ran out), Free (bytes available to unprivileged
// writers then) and Err (the underlying ENOSPC).
type NoSpaceError = durable.NoSpaceError

// File is a local file opened for loading. It implements Source,
// FileDescriptorSource, DirectInfo and Verifier. ReadAt is safe for
// concurrent use and handles the alignment O_DIRECT needs itself: aligned
// reads go straight into the caller's buffer, unaligned edges through a
// small aligned bounce buffer.
type File struct {
	f        fileops.File
	name     string
	size     int64
	direct   bool
	reason   string
	align    int64 // file offset and length alignment for O_DIRECT
	memAlign int64 // buffer address alignment for O_DIRECT
	id       fileIdentity
	scratch  sync.Pool // *[]byte, aligned, scratchSize long
	// ring sends small direct reads through the process's io_uring (see
	// ringReadMax); set by OpenFile where it is available.
	ring bool
}

// ringReadMax is the largest direct read sent through io_uring (package
// uring) instead of pread(2). Small reads are where a system call and a
// blocked thread per read cost most: through the ring 4 KiB random reads,
// 32 at a time, ran at a much higher rate, with a far lower p99
// (scripts/bench-vs-fio.sh; docs/PERFORMANCE-NOTES.md, loader). Large
// chunks keep pread, whose threads are cheap per byte (sequential loads
// measured the same).
const ringReadMax = 256 << 10

// fileIdentity is what must stay the same for a load to be trusted.
type fileIdentity struct {
	dev, ino     uint64
	size         int64
	mtime, ctime time.Time
}

// scratchSize is the aligned bounce buffer for unaligned reads.
const scratchSize = 1 << 20

// SmallFile is the size below which OpenFileForLoad reads a file through
// the page cache under DirectAuto.
const SmallFile = 1 << 20

const smallFileReason = "smaller than 1 MiB: read through the page cache, which costs less than O_DIRECT for small files"

// OpenFileForLoad is OpenFile for loading whole directories: under
// DirectAuto a file smaller than SmallFile is read through the page cache,
// and DirectReason says so. A direct read of a small file saves no copy
// worth its cost: small files load faster buffered, even from a cold
// cache (scripts/bench-vs-fio.sh, its small-files part;
// docs/PERFORMANCE-NOTES.md, loader).
func OpenFileForLoad(name string, mode DirectMode) (*File, error) {
	if mode == DirectAuto {
		if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() && st.Size() < SmallFile {
			f, err := OpenFile(name, DirectOff)
			if err != nil {
				return nil, err
			}
			f.reason = smallFileReason
			return f, nil
		}
	}
	return OpenFile(name, mode)
}

// smallDirectRead is the largest unaligned direct read done in one trip
// through the scratch buffer instead of body and tail apart.
const smallDirectRead = 64 << 10

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

// Size returns the size the file had when it was opened.
func (f *File) Size() int64 { return f.size }

// ModTime is the file's modification time when it was opened; a load
// fails if it changed meanwhile.
func (f *File) ModTime() time.Time { return f.id.mtime }

// Identity names the file's inode as it was when opened (device, inode,
// change time): two opens with the same identity read the same bytes
// unless the file was written in place meanwhile, which the load's
// verification catches.
func (f *File) Identity() string {
	return fmt.Sprintf("dev %d ino %d ctime %d", f.id.dev, f.id.ino, f.id.ctime.UnixNano())
}

// Fd returns the file's descriptor.
func (f *File) Fd() uintptr { return f.f.Fd() }

// Direct reports whether the file was opened with O_DIRECT.
func (f *File) Direct() bool { return f.direct }

// DirectReason says why O_DIRECT is not used, when it was wanted.
func (f *File) DirectReason() string { return f.reason }

// Alignment is the file offset alignment of direct reads.
func (f *File) Alignment() int64 { return f.align }

// MemAlignment is the buffer address alignment of direct reads.
func (f *File) MemAlignment() int64 { return f.memAlign }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadAt reads len(p) bytes at off. It returns io.EOF only when off+len(p)
// reaches past the size the file had when opened; a file that shrank while
// it was read gives an error wrapping ErrChanged that names the offset.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("read at a negative offset")
	}
	want := int64(len(p))
	var eof error
	if off >= f.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if off+want > f.size {
		want = f.size - off
		eof = io.EOF
	}
	var n int
	var err error
	if f.direct {
		n, err = f.readDirect(p[:want], off)
	} else {
		n, err = f.readBuffered(p[:want], off)
	}
	if err != nil {
		return n, err
	}
	return n, eof
}

func (f *File) readBuffered(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	if err == io.EOF && n < len(p) {
		return n, f.truncated(off + int64(n))
	}
	if err != nil {
		return n, fmt.Errorf("read at offset %d: %w", off+int64(n), err)
	}
	return n, nil
}

// readDirect reads exactly len(p) bytes (all inside the file) at off.
func (f *File) readDirect(p []byte, off int64) (int, error) {
	done := 0
	// A small request with an unaligned end (a small file, a file's last
	// bytes) is one read of its whole span through the scratch buffer: a
	// copy of a few KiB costs less than a second trip to the disk.
	small := int64(len(p))%f.align != 0 && len(p) <= smallDirectRead
	// Fast path: the aligned body straight into p.
	if !small && off%f.align == 0 && len(p) > 0 && addrOf(p)%uintptr(f.memAlign) == 0 {
		body := int64(len(p)) / f.align * f.align
		if body > 0 {
			n, err := f.preadFull(p[:body], off)
			done += n
			if errors.Is(err, io.EOF) {
				return done, f.truncated(off + int64(done))
			}
			if err != nil {
				return done, err
			}
		}
	}
	// Slow path: the rest through the aligned scratch buffer.
	for done < len(p) {
		pos := off + int64(done)
		start := pos / f.align * f.align
		sp := f.getScratch()
		buf := *sp
		span := alignUp(pos+int64(len(p)-done), f.align) - start
		if span > int64(len(buf)) {
			span = int64(len(buf))
		}
		n, err := f.preadFull(buf[:span], start)
		if err != nil && !errors.Is(err, io.EOF) {
			f.scratch.Put(sp)
			return done, err
		}
		got := int64(n) - (pos - start)
		if got <= 0 {
			f.scratch.Put(sp)
			return done, f.truncated(pos)
		}
		c := copy(p[done:], buf[pos-start:int64(n)])
		f.scratch.Put(sp)
		done += c
	}
	return done, nil
}

// preadFull reads len(buf) bytes at off with O_DIRECT rules: a short count
// that is not a multiple of the alignment means end of file. EINTR and
// aligned short reads are retried.
func (f *File) preadFull(buf []byte, off int64) (int, error) {
	done := 0
	for done < len(buf) {
		var n int
		var err error
		if f.ring && len(buf)-done <= ringReadMax {
			n, err = uring.Read(int(f.f.Fd()), buf[done:], off+int64(done))
		} else {
			n, err = f.f.Pread(buf[done:], off+int64(done))
		}
		if errors.Is(err, syscall.EINTR) {
			continue // interrupted before any byte moved: ask again
		}
		if err != nil {
			return done, fmt.Errorf("direct read at offset %d: %w", off+int64(done), err)
		}
		if n == 0 {
			return done, io.EOF
		}
		done += n
		if int64(n)%f.align != 0 && done < len(buf) {
			return done, io.EOF
		}
	}
	return done, nil
}

func (f *File) truncated(off int64) error {
	now := "unknown"
	if st, err := f.f.Stat(); err == nil {
		now = fmt.Sprint(st.Size())
	}
	return fmt.Errorf("%w: hit end of file at offset %d, but it was %d bytes when opened (now %s); reload once the writer is done", ErrChanged, off, f.size, now)
}

func (f *File) getScratch() *[]byte {
	if v := f.scratch.Get(); v != nil {
		return v.(*[]byte)
	}
	b := alignedSlice(scratchSize, int(max(f.memAlign, f.align)))
	return &b
}

// Verify reports an error wrapping ErrChanged when the file at the path is
// no longer the file that was opened, or when its size, modification time or
// change time moved since then.
func (f *File) Verify() error {
	if st, err := os.Stat(f.name); err == nil {
		if byPath, err := identifyInfo(st); err == nil && (byPath.ino != f.id.ino || byPath.dev != f.id.dev) {
			return fmt.Errorf("%w: the path now names another file (replaced by rename); reload it", ErrChanged)
		}
	}
	now, err := identify(f.f)
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if err := f.id.compare(now); err != nil {
		return fmt.Errorf("%w: %v; the bytes loaded may mix old and new contents, reload it", ErrChanged, err)
	}
	return nil
}

func (id fileIdentity) compare(now fileIdentity) error {
	switch {
	case now.size != id.size:
		return fmt.Errorf("size %d, was %d", now.size, id.size)
	case !now.mtime.Equal(id.mtime):
		return fmt.Errorf("modified at %s, after the load started", now.mtime.Format(time.RFC3339Nano))
	case !now.ctime.Equal(id.ctime):
		return fmt.Errorf("status changed at %s, after the load started", now.ctime.Format(time.RFC3339Nano))
	}
	return nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }
