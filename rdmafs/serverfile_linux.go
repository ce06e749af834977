package rdmafs

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Why a READ's file is opened, checked and closed with raw system calls.
//
// A plain system call tells the Go runtime that the thread may block, and
// the first one after the process has been wholly idle also wakes the
// runtime's monitor (sysmon), which then polls every 20 µs for at least a
// millisecond, handing the processor of any call that lasts longer than
// that to another thread. A server sending with sendfile goes idle
// whenever its sockets are full, that is, many times a second, and each
// READ opened, stat'ed and closed its file. On loads over loopback perf
// showed the monitor's polling as a visible share of the server's CPU, and
// with every per-READ call raw the server spent less CPU per load (the
// figures: docs/PERFORMANCE-NOTES.md, rdmafs). Raw calls, which the
// runtime does not see, are right only for calls that do not wait, so:
//
//   - the open is openat2(2) with RESOLVE_CACHED, which fails rather than
//     wait when a component of the name is not in the kernel's caches,
//     and RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, which keeps it beneath
//     the export root, as strict as os.Root;
//   - sendfile is raw only for pieces wholly in the page cache
//     (residentRange, with cachestat(2));
//   - an open or close on NFS is a round trip to its server, and a FUSE
//     open one to its daemon, so the raw path is taken only when the
//     export root is on a local disk filesystem (localFilesystem) and the
//     name does not cross into another mount (RESOLVE_NO_XDEV);
//   - anything else (a name not cached, an error of any kind, a kernel
//     without openat2 or cachestat) takes the plain path through os.Root,
//     which also gives every refusal its usual error.

// cachedOpenOff is set once openat2 with these flags proved unusable here
// (ENOSYS before Linux 5.6, EINVAL before 5.12, EPERM under a seccomp
// filter): the server then opens every file through os.Root.
var cachedOpenOff atomic.Bool

// resolveCached is RESOLVE_CACHED (Linux 5.12), which x/sys/unix lacks.
const resolveCached = 0x20

// openCached opens name beneath the export root with raw openat2 and fstat
// calls, and returns nil when the plain path must be taken instead: the
// name not wholly in the dentry cache, anything but a regular file, or any
// error (which os.Root then reports).
func (s *Server) openCached(name string) *sendFile {
	if s.rootConn == nil || cachedOpenOff.Load() {
		return nil
	}
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return nil
	}
	how := unix.OpenHow{
		Flags:   uint64(syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV | resolveCached,
	}
	var fd uintptr
	var errno syscall.Errno
	// Control holds the root directory's descriptor open for the call.
	if s.rootConn.Control(func(dir uintptr) {
		fd, _, errno = syscall.RawSyscall6(unix.SYS_OPENAT2, dir, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	}) != nil {
		return nil
	}
	switch errno {
	case 0:
	case syscall.ENOSYS, syscall.EINVAL, syscall.EPERM:
		cachedOpenOff.Store(true)
		return nil
	default:
		return nil
	}
	sf := &sendFile{fd: fd}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_FSTAT, fd, uintptr(unsafe.Pointer(&sf.st)), 0); errno != 0 || sf.st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		closeRaw(fd)
		return nil
	}
	return sf
}

// rawOpenDir returns dir, the export root, for openCached when it is on a
// local disk filesystem. Otherwise it returns nil (os.Root opens every
// file) and why, for the server's log.
func rawOpenDir(dir *os.File) (syscall.RawConn, string) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(dir.Fd()), &st); err != nil {
		return nil, fmt.Sprintf("cannot tell the export root's filesystem: %v", err)
	}
	if !localFilesystem(int64(st.Type)) {
		return nil, fmt.Sprintf("the export root's filesystem (statfs type %#x) is not a local disk filesystem (ext4, XFS, Btrfs, F2FS, bcachefs, tmpfs), where an open cannot wait on a network or a daemon", st.Type)
	}
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, err.Error()
	}
	return rc, ""
}

// localFilesystem reports whether a filesystem of this statfs type opens
// and closes files without waiting on anything but the local disk.
func localFilesystem(fsType int64) bool {
	switch fsType {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// closeRaw closes a descriptor openCached opened. Closing a file opened
// read-only does not wait for the disk.
func closeRaw(fd uintptr) { syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0) }

// residentRange reports whether file bytes [off, off+n) are all in the
// page cache (cachestat(2), Linux 6.5; false where it is missing).
func residentRange(fd uintptr, off, n int64) bool {
	if n <= 0 || cachestatOff.Load() {
		return false
	}
	r := unix.CachestatRange{Off: uint64(off), Len: uint64(n)}
	var cs unix.Cachestat_t
	if _, _, errno := syscall.RawSyscall6(unix.SYS_CACHESTAT, fd, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0); errno != 0 {
		if errno == syscall.ENOSYS || errno == syscall.EPERM {
			cachestatOff.Store(true)
		}
		return false
	}
	page := int64(os.Getpagesize())
	return int64(cs.Cache) >= (off+n-1)/page-off/page+1
}

var cachestatOff atomic.Bool
