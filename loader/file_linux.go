package loader

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/durable"
	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/regular"
	"github.com/gdsload/gdsload/internal/uring"
)

// OpenFile opens a local file for loading. With DirectAuto it uses O_DIRECT
// where the file system accepts it (probed with a first aligned read) and
// otherwise reads through the page cache, saying why in DirectReason. With
// DirectOn a refusal is an error.
func OpenFile(name string, mode DirectMode) (*File, error) {
	return withRing(openFile(name, mode, func(flag int) (*os.File, error) { return os.OpenFile(name, flag, 0) }, fileops.OS))
}

// OpenFileInRoot is OpenFile for a name resolved beneath root: "..",
// absolute names and symbolic links that leave root are refused (os.Root).
func OpenFileInRoot(root *os.Root, name string, mode DirectMode) (*File, error) {
	return withRing(openFile(filepath.Join(root.Name(), name), mode, func(flag int) (*os.File, error) { return root.OpenFile(name, flag, 0) }, fileops.OS))
}

// withRing sends f's small direct reads through io_uring where the kernel
// offers it (files opened through a test's wrapper keep its Pread).
func withRing(f *File, err error) (*File, error) {
	if err == nil && f.direct {
		f.ring = uring.Available()
	}
	return f, err
}

// openFile opens with open and reads through wrap of the file opened (a
// wrapper of fileops.OS in tests that inject faults); name is the file's path
// for results, errors and file system names.
func openFile(name string, mode DirectMode, open func(flag int) (*os.File, error), wrap func(*os.File) fileops.File) (*File, error) {
	f := &File{name: name, align: DefaultAlignment, memAlign: DefaultAlignment}
	// regular.OpenWith refuses what is not a regular file (a FIFO at once,
	// without waiting for a writer) before any read.
	var fi os.FileInfo // the open file's stat: its identity
	if mode != DirectOff {
		fd, st, err := regular.OpenWith(name, os.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, open)
		switch {
		case err == nil:
			f.f, f.direct, fi = wrap(fd), true, st
			f.align, f.memAlign = dioAlign(fd)
			key, known := directReadsWork(fd.Fd(), st)
			if known {
				break
			}
			if perr := f.probeDirect(); perr != nil {
				f.f.Close()
				f.f, f.direct = nil, false
				f.reason = fmt.Sprintf("O_DIRECT read refused by %s (%v); using buffered reads", fsName(name), perr)
			} else if key != nil {
				directOK.Store(*key, true)
			}
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
			if st, serr := os.Stat(name); serr == nil && !st.Mode().IsRegular() {
				return nil, &regular.NotRegularError{Path: name, Mode: st.Mode()}
			}
			f.reason = fmt.Sprintf("O_DIRECT refused by %s (%v); using buffered reads", fsName(name), unwrapErrno(err))
		default:
			return nil, err
		}
		if !f.direct && mode == DirectOn {
			return nil, fmt.Errorf("%s: %w: %s", name, ErrDirectRefused, f.reason)
		}
	}
	if f.f == nil {
		fd, st, err := regular.OpenWith(name, os.O_RDONLY|unix.O_CLOEXEC, open)
		if err != nil {
			return nil, err
		}
		f.f, fi = wrap(fd), st
	}
	id, err := identifyInfo(fi)
	if err != nil {
		f.f.Close()
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	f.id, f.size = id, id.size
	return f, nil
}

// directOK holds the file systems on which a probe read with O_DIRECT
// has succeeded: O_DIRECT support is a property of the mount, so one probe
// per file system and process is enough, and loads of many small files do
// not read each first block twice. A file system is its device number and
// type, so a device number reused by a later mount of another type is
// probed again.
var directOK sync.Map

type fsKey struct {
	dev    uint64
	fsType int64
}

// directReadsWork tells whether the file system of descriptor fd (whose
// stat is fi) already passed the probe; key identifies it, nil when it
// cannot be told.
func directReadsWork(fd uintptr, fi os.FileInfo) (key *fsKey, known bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	var sfs unix.Statfs_t
	if !ok || unix.Fstatfs(int(fd), &sfs) != nil {
		return nil, false
	}
	k := fsKey{dev: st.Dev, fsType: int64(sfs.Type)}
	_, known = directOK.Load(k)
	return &k, known
}

// probeDirect reads the first aligned block: some file systems accept the
// O_DIRECT flag at open and refuse the reads.
func (f *File) probeDirect() error {
	b := alignedSlice(int(f.align), int(max(f.memAlign, f.align)))
	if _, err := f.preadFull(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return errors.Unwrap(err)
	}
	return nil
}

func identify(f fileops.File) (fileIdentity, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileIdentity{}, err
	}
	return identityOf(&st), nil
}

func identifyInfo(fi os.FileInfo) (fileIdentity, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, errors.New("no stat data")
	}
	return identityOf(st), nil
}

func identityOf(st *syscall.Stat_t) fileIdentity {
	return fileIdentity{
		dev:   st.Dev,
		ino:   st.Ino,
		size:  st.Size,
		mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
	}
}

func unwrapErrno(err error) error { return durable.Errno(err) }

func dioAlign(f interface{ Fd() uintptr }) (offset, mem int64) { return durable.DIOAlign(f) }

func addrOf(b []byte) uintptr { return durable.Addr(b) }

func fsName(path string) string { return durable.FSName(path) }

// FSName names the file system holding path ("ext4", "tmpfs", "ramfs" ...).
func FSName(path string) string { return durable.FSName(path) }
