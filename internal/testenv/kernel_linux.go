package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resolveCached is RESOLVE_CACHED (Linux 5.12), which x/sys/unix lacks.
const resolveCached = 0x20

// CachedOpenat2 reports whether this kernel takes openat2 with
// RESOLVE_BENEATH and RESOLVE_CACHED (Linux 5.12, and no seccomp filter
// refusing openat2), by opening a file just created in dir, whose name is
// then in the dentry cache. When not, reason says what the kernel
// answered.
func CachedOpenat2(dir string) (ok bool, reason string) {
	name := filepath.Join(dir, ".openat2-probe")
	if err := os.WriteFile(name, []byte("x"), 0o600); err != nil {
		return false, fmt.Sprintf("creating a probe file: %v", err)
	}
	defer os.Remove(name)
	if _, err := os.Stat(name); err != nil {
		return false, fmt.Sprintf("stat of the probe file: %v", err)
	}
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Sprintf("opening %s: %v", dir, err)
	}
	defer unix.Close(d)
	fd, err := unix.Openat2(d, filepath.Base(name), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | resolveCached,
	})
	if err != nil {
		return false, fmt.Sprintf("openat2 with RESOLVE_CACHED: %v (it needs Linux 5.12 and no seccomp filter refusing it)", err)
	}
	unix.Close(fd)
	return true, ""
}

// Cachestat reports whether this kernel has cachestat(2) (Linux 6.5), by
// calling it on a file of dir. When not, reason says what the kernel
// answered.
func Cachestat(dir string) (ok bool, reason string) {
	f, err := os.CreateTemp(dir, ".cachestat-probe-*")
	if err != nil {
		return false, fmt.Sprintf("creating a probe file: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		return false, fmt.Sprintf("writing the probe file: %v", err)
	}
	r := unix.CachestatRange{Off: 0, Len: 4096}
	var cs unix.Cachestat_t
	_, _, errno := unix.Syscall6(unix.SYS_CACHESTAT, f.Fd(), uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0)
	if errno != 0 {
		if errors.Is(errno, unix.ENOSYS) {
			return false, "cachestat(2): ENOSYS (it needs Linux 6.5)"
		}
		return false, fmt.Sprintf("cachestat(2): %v", errno)
	}
	return true, ""
}

// IOURing reports whether this process may set up an io_uring (Linux 5.1,
// not turned off by the kernel.io_uring_disabled sysctl or a seccomp
// filter), by setting up one of a single entry and closing it. When not,
// reason says what the kernel answered.
func IOURing() (ok bool, reason string) {
	var params [120]byte // struct io_uring_params, zeroed
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return false, fmt.Sprintf("io_uring_setup(2): %v (it needs Linux 5.1, kernel.io_uring_disabled=0 and no seccomp filter refusing it)", errno)
	}
	unix.Close(int(fd))
	return true, ""
}

// RequireIOURing names the environment variable that turns a skip for a
// kernel without io_uring (NeedIOURing) into a failure. .ci/run sets it.
const RequireIOURing = "GDSLOAD_REQUIRE_IO_URING"

// NeedIOURing skips tb where this process cannot set up an io_uring
// (IOURing says why), or fails it where RequireIOURing is set.
func NeedIOURing(tb testing.TB) {
	tb.Helper()
	ok, reason := IOURing()
	if ok {
		return
	}
	if v := os.Getenv(RequireIOURing); v != "" && v != "0" {
		tb.Fatalf("no io_uring here (%s), and %s=%s", reason, RequireIOURing, v)
	}
	tb.Skipf("no io_uring here: %s", reason)
}
