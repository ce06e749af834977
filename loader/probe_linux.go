package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// memlockBudget is the locked memory a load with default settings pins:
// 16 pinned buffers of 4 MiB. Below it cudaHostAlloc may fail where
// pinned memory counts against RLIMIT_MEMLOCK (RDMA registration does).
const memlockBudget = 64 << 20

// MemlockLimit reports the locked-memory limit.
func MemlockLimit() Memlock {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return Memlock{Note: "getrlimit(RLIMIT_MEMLOCK) failed: " + err.Error()}
	}
	f := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return fmt.Sprintf("%d", v)
	}
	m := Memlock{Soft: f(rl.Cur), Hard: f(rl.Max), SoftBytes: rl.Cur}
	if rl.Cur != unix.RLIM_INFINITY && rl.Cur < memlockBudget {
		m.Note = fmt.Sprintf("below %d MiB: pinning or RDMA-registering large buffers may fail; raise it (ulimit -l unlimited, or LimitMEMLOCK=infinity in systemd, or --ulimit memlock=-1 in docker)", memlockBudget>>20)
	}
	return m
}

// ProbeDirectIO checks O_DIRECT where the data lives: PATH itself when it
// is a file (an aligned read at offset 0), else a scratch file created in
// the folder (an aligned write and read back). statx reports the
// alignment the file system wants where the kernel supports STATX_DIOALIGN.
func ProbeDirectIO(path string) DirectIOProbe {
	r := DirectIOProbe{Path: path}
	abs, err := filepath.Abs(path)
	if err == nil {
		r.Path = abs
	}
	st, err := os.Stat(path)
	if err != nil {
		r.Reason = "cannot check: " + err.Error()
		return r
	}
	r.FileSystem = FSName(path)
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx) == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		r.MemAlign, r.OffsetAlign = stx.Dio_mem_align, stx.Dio_offset_align
	}
	buf := AlignedBuffer(4096)
	if st.Mode().IsRegular() {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if err != nil {
			r.Reason = fmt.Sprintf("O_DIRECT open refused by %s: %v", r.FileSystem, err)
			return r
		}
		defer unix.Close(fd)
		if _, err := unix.Pread(fd, buf, 0); err != nil {
			r.Reason = fmt.Sprintf("O_DIRECT read refused by %s: %v", r.FileSystem, err)
			return r
		}
		r.OK, r.Reason = true, fmt.Sprintf("O_DIRECT read of %s on %s works", filepath.Base(path), r.FileSystem)
		return r
	}
	scratch := filepath.Join(path, fmt.Sprintf(".gdsload-doctor-%d", os.Getpid()))
	fd, err := unix.Open(scratch, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS) || errors.Is(err, unix.EPERM) {
		r.Reason = fmt.Sprintf("cannot check: no scratch file in %s (%v); run doctor on a file there", path, err)
		return r
	}
	if err != nil {
		r.Reason = fmt.Sprintf("O_DIRECT open refused by %s: %v", r.FileSystem, err)
		return r
	}
	defer os.Remove(scratch)
	defer unix.Close(fd)
	if _, err := unix.Pwrite(fd, buf, 0); err != nil {
		r.Reason = fmt.Sprintf("O_DIRECT write refused by %s: %v", r.FileSystem, err)
		return r
	}
	if _, err := unix.Pread(fd, buf, 0); err != nil {
		r.Reason = fmt.Sprintf("O_DIRECT read refused by %s: %v", r.FileSystem, err)
		return r
	}
	r.OK, r.Reason = true, fmt.Sprintf("O_DIRECT write and read on %s work", r.FileSystem)
	return r
}
