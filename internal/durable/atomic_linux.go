package durable

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/fileops"
)

// AtomicFile is a file being written under a temporary name in the
// directory of its final path, so that publishing it is an atomic rename on
// the same file system. A crash or kill before Publish leaves only the
// temporary file, whose name IsTempName recognises, never a partial file
// under the final name.
//
// The temporary file is preallocated to its final size (fallocate), so a
// full disk is reported before any byte is written where the file system
// supports it. It is opened with O_DIRECT where asked for and accepted;
// WriteAt then needs offsets that are multiples of Alignment and memory
// aligned to MemAlignment, and a tail may be padded to the alignment:
// Publish truncates the file to its size. WriteAt may be called from many
// goroutines at once.
type AtomicFile struct {
	fs    fileops.FS
	f     fileops.File
	final string
	temp  string
	size  int64
	// align and memAlign are set by open and never change (a fallback to
	// buffered writes keeps the layout legal).
	align, memAlign int64

	mu     sync.Mutex // guards the direct-I/O state, which a refused write changes
	direct bool
	reason string
}

// tempMarker separates the final base name from the random suffix of a
// temporary name: ".NAME.gdsload-XXXXXX", in the manner of rsync's
// ".NAME.XXXXXX" but recognisable as gdsload's own.
const tempMarker = ".gdsload-"

// IsTempName reports whether base (a file name without directory) is the
// name of an AtomicFile's temporary file, so a later run may remove those
// left behind by a crash.
func IsTempName(base string) bool {
	if !strings.HasPrefix(base, ".") {
		return false
	}
	i := strings.LastIndex(base, tempMarker)
	if i < 2 {
		return false
	}
	suffix := base[i+len(tempMarker):]
	if len(suffix) != 6 {
		return false
	}
	for _, c := range suffix {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// TempName returns a fresh temporary name beside final, one IsTempName
// recognises.
func TempName(final string) (string, error) {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	for i := range r {
		r[i] = letters[int(r[i])%len(letters)]
	}
	return filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+tempMarker+string(r[:])), nil
}

// CreateAtomic creates the temporary file for final, size bytes long. With
// DirectAuto it writes with O_DIRECT where the file system takes it and
// otherwise through the page cache, saying why in DirectReason; DirectOn
// makes a refusal an error. A full destination is a *NoSpaceError.
func CreateAtomic(final string, size int64, mode DirectMode) (*AtomicFile, error) {
	return CreateAtomicFS(fileops.Default(), final, size, mode)
}

// CreateAtomicFS is CreateAtomic through fsys: every open, write, sync,
// rename and removal of the file goes through it (tests wrap it to inject
// faults and observe the order of operations).
func CreateAtomicFS(fsys fileops.FS, final string, size int64, mode DirectMode) (*AtomicFile, error) {
	final, perm, err := replacing(final)
	if err != nil {
		return nil, err
	}
	a := &AtomicFile{fs: fsys, final: final, size: size, align: DefaultAlignment, memAlign: DefaultAlignment}
	for range 10 { // a name collision is retried with a fresh suffix
		if a.temp, err = TempName(final); err != nil {
			return nil, err
		}
		if err = a.open(mode); !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating a temporary file beside %s: %w", final, err)
	}
	if perm != 0 {
		if err := unix.Fchmod(int(a.f.Fd()), uint32(perm)); err != nil {
			a.Abort()
			return nil, fmt.Errorf("giving the temporary file beside %s its mode %v: %w", final, perm, err)
		}
	}
	if size > 0 {
		if err := fallocate(a.f, size); err != nil {
			a.Abort()
			if errors.Is(err, unix.ENOSPC) {
				return nil, newNoSpaceError(filepath.Dir(final), size, err)
			}
			return nil, fmt.Errorf("preallocating %d bytes for %s: %w", size, final, err)
		}
	}
	return a, nil
}

// replacing resolves the path a file is published under as open(2) with
// O_TRUNC would: a symbolic link (or a chain of them) is followed to the
// file it names, which is then replaced, leaving the link in place; a link
// whose target does not exist, or that loops, is refused. perm is the
// permission bits of the file being replaced, kept by its replacement; 0
// when there is none.
func replacing(final string) (string, fs.FileMode, error) {
	fi, err := os.Lstat(final)
	if err != nil {
		return final, 0, nil // a new file (or an error that creating it will report)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(final)
		if err != nil {
			return "", 0, fmt.Errorf("writing %s: it is a symbolic link whose target cannot be reached (%w); remove the link or point it at a file", final, err)
		}
		if fi, err = os.Stat(target); err != nil {
			return "", 0, fmt.Errorf("writing %s (a symbolic link to %s): %w", final, target, err)
		}
		final = target
	}
	if !fi.Mode().IsRegular() {
		return final, 0, nil // a directory or a device: the rename reports it
	}
	return final, fi.Mode().Perm(), nil
}

func (a *AtomicFile) open(mode DirectMode) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL | unix.O_CLOEXEC
	if mode != DirectOff {
		f, err := a.fs.OpenFile(a.temp, flags|unix.O_DIRECT, 0o644)
		switch {
		case err == nil:
			a.f, a.direct = f, true
			a.align, a.memAlign = DIOAlign(f)
			if a.memAlign > DefaultAlignment {
				// Page-aligned buffers are what callers have.
				a.reason = fmt.Sprintf("O_DIRECT writes on %s need %d-byte aligned memory; using buffered writes", FSName(a.temp), a.memAlign)
				return a.dropDirect(mode)
			}
			return nil
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
			a.reason = fmt.Sprintf("O_DIRECT writes refused by %s (%v); using buffered writes", FSName(filepath.Dir(a.temp)), Errno(err))
			if mode == DirectOn {
				return fmt.Errorf("%w: %s", ErrDirectRefused, a.reason)
			}
		default:
			return err
		}
	}
	f, err := a.fs.OpenFile(a.temp, flags, 0o644)
	if err != nil {
		return err
	}
	a.f = f
	return nil
}

// dropDirect switches the open file to buffered writes; the alignment stays
// as it was, so writes laid out for it remain valid. Called with mu held or
// before the file is shared.
func (a *AtomicFile) dropDirect(mode DirectMode) error {
	if mode == DirectOn {
		a.Abort()
		return fmt.Errorf("%w: %s", ErrDirectRefused, a.reason)
	}
	fl, err := unix.FcntlInt(a.f.Fd(), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(a.f.Fd(), unix.F_SETFL, fl&^unix.O_DIRECT)
	}
	if err != nil {
		a.Abort()
		return fmt.Errorf("clearing O_DIRECT on %s: %w", a.temp, err)
	}
	a.direct = false
	return nil
}

func fallocate(f fileops.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch err {
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP, unix.ENOSYS:
			return nil // preallocation is an optimisation; writes still report ENOSPC
		}
		return err
	}
}

// Final is the path the file is published under.
func (a *AtomicFile) Final() string { return a.final }

// TempPath is the temporary file's path until Publish.
func (a *AtomicFile) TempPath() string { return a.temp }

// Size is the size the file has once published.
func (a *AtomicFile) Size() int64 { return a.size }

// Fd returns the descriptor of the temporary file (for cuFileWrite).
func (a *AtomicFile) Fd() uintptr { return a.f.Fd() }

// Direct reports whether writes bypass the page cache.
func (a *AtomicFile) Direct() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.direct
}

// DirectReason says why writes are buffered although direct I/O was asked
// for ("" otherwise).
func (a *AtomicFile) DirectReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reason
}

// Alignment is the offset and length alignment direct writes need, as
// opened (statx STATX_DIOALIGN, else 4 KiB). Writes laid out by it stay
// legal after a fallback to buffered writes.
func (a *AtomicFile) Alignment() int64 { return a.align }

// MemAlignment is the buffer address alignment direct writes need.
func (a *AtomicFile) MemAlignment() int64 { return a.memAlign }

// WriteAt writes all of p at off, retrying EINTR and short writes. If the
// file system refuses an O_DIRECT write that the alignment rules allow
// (EINVAL), the file falls back to buffered writes, recording why, and the
// write is retried; a full disk is a *NoSpaceError. p may run past Size by
// the padding of an aligned tail.
func (a *AtomicFile) WriteAt(p []byte, off int64) error {
	for done := 0; done < len(p); {
		n, err := a.f.Pwrite(p[done:], off+int64(done))
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EINVAL:
			if ferr := a.refused(p[done:], off+int64(done), err); ferr != nil {
				return ferr
			}
			continue
		case err == unix.ENOSPC:
			return newNoSpaceError(filepath.Dir(a.final), a.size-off-int64(done), err)
		case err != nil:
			return fmt.Errorf("writing %d bytes at offset %d of %s: %w", len(p)-done, off+int64(done), a.temp, err)
		case n == 0:
			return fmt.Errorf("writing at offset %d of %s: no progress", off+int64(done), a.temp)
		}
		done += n
	}
	return nil
}

// refused falls back to buffered writes after the file system refused a
// direct write the alignment rules allow; any other EINVAL is returned.
func (a *AtomicFile) refused(p []byte, off int64, err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !a.direct:
		// Another writer already fell back: retry buffered.
		if fl, ferr := unix.FcntlInt(a.f.Fd(), unix.F_GETFL, 0); ferr == nil && fl&unix.O_DIRECT == 0 {
			return nil
		}
	case off%a.align == 0 && Addr(p)%uintptr(a.memAlign) == 0:
		a.reason = fmt.Sprintf("O_DIRECT write refused by %s (%v); using buffered writes", FSName(a.temp), err)
		return a.dropDirect(DirectAuto)
	}
	return fmt.Errorf("writing %d bytes at offset %d of %s: %w", len(p), off, a.temp, err)
}

// Sync truncates the temporary file to Size (dropping the padding of an
// aligned tail) and flushes it to stable storage. After Sync the file's
// bytes may be read back from TempPath to verify them.
func (a *AtomicFile) Sync() error {
	if err := a.f.Truncate(a.size); err != nil {
		return fmt.Errorf("truncating %s to %d bytes: %w", a.temp, a.size, err)
	}
	if err := a.f.Sync(); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return newNoSpaceError(filepath.Dir(a.final), a.size, err)
		}
		return fmt.Errorf("fsync %s: %w", a.temp, err)
	}
	return nil
}

// SetModeTime gives the temporary file mode's permission bits (when mode
// is not 0) and the modification time mtime (when it is not zero), as
// `cp -p` does: call it after the last write and Sync, before Publish.
func (a *AtomicFile) SetModeTime(mode fs.FileMode, mtime time.Time) error {
	if mode != 0 {
		if err := unix.Fchmod(int(a.f.Fd()), uint32(mode.Perm())); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", a.temp, err)
		}
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(a.temp, time.Time{}, mtime); err != nil {
			return fmt.Errorf("setting the modification time of %s: %w", a.temp, err)
		}
	}
	return nil
}

// Stat describes the temporary file; its inode and modification time stay
// the same through Publish.
func (a *AtomicFile) Stat() (os.FileInfo, error) { return a.f.Stat() }

// Publish renames the synced temporary file to its final name, replacing
// any file there, and syncs the directory so the rename is durable. Call
// Sync first. On error the temporary file is removed.
func (a *AtomicFile) Publish() error {
	if err := a.Rename(); err != nil {
		return err
	}
	return a.fs.SyncDir(filepath.Dir(a.final))
}

// Rename is Publish without the directory sync, for callers that publish
// several files into one directory and sync it once (SyncDir) after the
// last rename: until then a crash may undo the rename.
func (a *AtomicFile) Rename() error {
	if err := a.f.Close(); err != nil {
		a.Abort()
		return fmt.Errorf("closing %s: %w", a.temp, err)
	}
	a.f = nil
	if err := a.fs.Rename(a.temp, a.final); err != nil {
		temp := a.temp // Abort forgets it
		a.Abort()
		return fmt.Errorf("renaming %s to %s: %w", temp, a.final, err)
	}
	a.temp = ""
	return nil
}

// Abort closes and removes the temporary file. It is safe to call after
// Publish (it does nothing) and more than once.
func (a *AtomicFile) Abort() {
	if a.f != nil {
		_ = a.f.Close()
		a.f = nil
	}
	if a.temp != "" {
		_ = a.fs.Remove(a.temp)
		a.temp = ""
	}
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error { return fileops.Default().SyncDir(dir) }

// NoSpaceError reports a destination file system without room for what a
// write still needed.
type NoSpaceError struct {
	Dir    string // the destination directory
	Needed int64  // bytes still to write when the space ran out
	Free   int64  // bytes available to unprivileged writers then
	Err    error  // the underlying error (ENOSPC)
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("destination %s is full: needed %d bytes more, free %d; free some space or choose another destination", e.Dir, e.Needed, e.Free)
}

func (e *NoSpaceError) Unwrap() error { return e.Err }

func newNoSpaceError(dir string, needed int64, err error) *NoSpaceError {
	return &NoSpaceError{Dir: dir, Needed: needed, Free: FreeSpace(dir), Err: err}
}

// FreeSpace returns the bytes available to unprivileged writers on the file
// system holding path, or -1 when statfs fails.
func FreeSpace(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

// WriteFile writes b to path atomically through the page cache (a small
// file: a manifest, a state): readers see the old file or the new one,
// never a torn one.
func WriteFile(path string, b []byte) error {
	a, err := CreateAtomic(path, int64(len(b)), DirectOff)
	if err != nil {
		return err
	}
	if err := a.WriteAt(b, 0); err != nil {
		a.Abort()
		return err
	}
	if err := a.Sync(); err != nil {
		a.Abort()
		return err
	}
	return a.Publish()
}
