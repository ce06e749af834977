// Package realcufile sets up, as root, what NVIDIA's real libcufile needs
// to run over the CUDA test double (internal/fakecuda) on a machine
// without a GPU, so that gdsload's gds route is tested against NVIDIA's
// own cuFile: udevd running, an ext4 file system on a loop device that
// udev knows (cuFileHandleRegister asks udev for ID_FS_TYPE and
// ID_FS_USAGE), a tmpfs beside it (where registration fails), the
// project's cufile.json allowing compat mode, and a log file.
//
// Two real libraries are used: Debian's non-free libcufile0 (cuFile 1.4)
// and PyPI's nvidia-cufile-cu12 (cuFile 1.14) from the venv that `make
// venv` builds in build/venv. scripts/real-cufile-check.sh does the same
// setup for people.
//
// This proves NVIDIA's API contract, handle and buffer registration and
// compat-mode reads and writes; not nvidia-fs or P2PDMA DMA, real device
// memory, or speed.
package realcufile

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/internal/fakecuda"
)

// JSON is the project's cufile.json: compat mode allowed, TRACE logging.
//
//go:embed cufile.json
var JSON []byte

//go:embed csrc/procmodules.c
var procModulesSource []byte

// DebianPath is where Debian's libcufile0 installs libcufile.
const DebianPath = "/usr/lib/x86_64-linux-gnu/libcufile.so.0"

// Library is one real libcufile.
type Library struct {
	// Name is "debian" (libcufile0, cuFile 1.4) or "pypi"
	// (nvidia-cufile-cu12, cuFile 1.14).
	Name string
	// Path is the libcufile.so.0 to load, "" where it is not installed.
	Path string
	// Install says how to get it.
	Install string
}

// Libraries returns both real libraries, with Path "" for one that is not
// installed. root is the repository's root (the venv is build/venv).
func Libraries(root string) []Library {
	deb := Library{Name: "debian", Install: "apt-get install libcufile0 (Debian non-free)"}
	if _, err := os.Stat(DebianPath); err == nil {
		deb.Path = DebianPath
	}
	pypi := Library{Name: "pypi", Install: "make venv (nvidia-cufile-cu12 from scripts/test-requirements.txt)"}
	m, _ := filepath.Glob(filepath.Join(root, "build", "venv", "lib", "python3*", "site-packages", "nvidia", "cufile", "lib", "libcufile.so.0"))
	if len(m) > 0 {
		pypi.Path = m[0]
	}
	return []Library{deb, pypi}
}

// Missing says what this machine lacks to set the harness up, "" for
// nothing: root, the tools, udevd.
func Missing() string {
	if os.Geteuid() != 0 {
		return "not root (a loop device and mounts are needed)"
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount", "udevadm", "truncate"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found"
		}
	}
	if _, err := os.Stat(udevd); err != nil {
		return udevd + " not found (apt-get install udev)"
	}
	if _, err := fakecuda.Compiler(); err != nil {
		return err.Error()
	}
	return ""
}

const (
	udevd = "/lib/systemd/systemd-udevd"
	// lockPath serializes setups across test processes and counts users
	// (shared locks) of a udevd that a harness started.
	lockPath = "/run/gdsload-realcufile.lock"
	// startedPath exists while a udevd that a harness started runs.
	startedPath = "/run/gdsload-realcufile.udevd"
)

// Harness is one setup. Close undoes it.
type Harness struct {
	// Dir is the ext4 mount: files cuFile reads and writes go here.
	Dir string
	// Tmpfs is a tmpfs mount, where cuFile's handle registration fails.
	Tmpfs string
	// JSONPath is the project's cufile.json (CUFILE_ENV_PATH_JSON).
	JSONPath string
	// LogFile is where libcufile logs (CUFILE_LOGFILE_PATH).
	LogFile string
	// Double is the CUDA test double that serves as libcuda.so.1.
	Double *fakecuda.Libs
	// Preload is the shim preloaded where /proc/modules is missing, "" else.
	Preload string

	work, loop string
	lock       *os.File
	undo       []func() error
}

// Setup builds the harness in work (an empty folder it may fill).
func Setup(work string) (h *Harness, err error) {
	h = &Harness{work: work}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Close())
			h = nil
		}
	}()
	if why := Missing(); why != "" {
		return nil, errors.New("realcufile: " + why)
	}
	if h.Double, err = fakecuda.Cached(); err != nil {
		return h, err
	}
	h.JSONPath = filepath.Join(work, "cufile.json")
	h.LogFile = filepath.Join(work, "cufile.log")
	if err = os.WriteFile(h.JSONPath, JSON, 0o644); err != nil {
		return h, err
	}
	if _, serr := os.Stat("/proc/modules"); serr != nil {
		if h.Preload, err = buildShim(work); err != nil {
			return h, err
		}
	}
	if h.lock, err = os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644); err != nil {
		return h, fmt.Errorf("realcufile: %w", err)
	}
	if err = syscall.Flock(int(h.lock.Fd()), syscall.LOCK_EX); err != nil {
		return h, fmt.Errorf("realcufile: lock %s: %w", lockPath, err)
	}
	if err = ensureUdevd(); err != nil {
		return h, err
	}
	if err = h.mountLoop(); err != nil {
		return h, err
	}
	h.Tmpfs = filepath.Join(work, "tmpfs")
	if err = os.MkdirAll(h.Tmpfs, 0o755); err != nil {
		return h, err
	}
	if err = run("mount", "-t", "tmpfs", "-o", "size=64m", "gdsload-realcufile", h.Tmpfs); err != nil {
		return h, err
	}
	h.undo = append(h.undo, func() error { return run("umount", h.Tmpfs) })
	// Other harnesses may set up and use udevd now.
	if err = syscall.Flock(int(h.lock.Fd()), syscall.LOCK_SH); err != nil {
		return h, fmt.Errorf("realcufile: lock %s: %w", lockPath, err)
	}
	return h, nil
}

// mountLoop makes an ext4 image, attaches it to a loop device, waits for
// udev to record its file system and mounts it at Dir.
func (h *Harness) mountLoop() error {
	img := filepath.Join(h.work, "ext4.img")
	if err := run("truncate", "-s", "192M", img); err != nil {
		return err
	}
	if err := run("mkfs.ext4", "-q", "-F", img); err != nil {
		return err
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		return fmt.Errorf("realcufile: losetup --find --show %s: %w", img, err)
	}
	h.loop = strings.TrimSpace(string(out))
	h.undo = append(h.undo, func() error { return run("losetup", "-d", h.loop) })
	if err := waitUdevFS(h.loop); err != nil {
		return err
	}
	h.Dir = filepath.Join(h.work, "ext4")
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	if err := run("mount", h.loop, h.Dir); err != nil {
		return err
	}
	h.undo = append(h.undo, func() error { return run("umount", h.Dir) })
	return nil
}

// waitUdevFS polls udev's database until it holds ID_FS_TYPE=ext4 for dev.
func waitUdevFS(dev string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		return fmt.Errorf("realcufile: stat %s: %w", dev, err)
	}
	major, minor := (st.Rdev>>8)&0xfff, (st.Rdev&0xff)|((st.Rdev>>12)&0xfff00)
	db := fmt.Sprintf("/run/udev/data/b%d:%d", major, minor)
	// A change event makes udevd probe the device again (a loop device's
	// number is reused, and its old record may be stale); repeated while
	// waiting, in case udevd was still starting.
	var trigger time.Time
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if time.Since(trigger) > 5*time.Second {
			if err := run("udevadm", "trigger", "--action=change", "--sysname-match="+filepath.Base(dev)); err != nil {
				return err
			}
			_ = run("udevadm", "settle", "--timeout=5")
			trigger = time.Now()
		}
		if b, err := os.ReadFile(db); err == nil && strings.Contains(string(b), "E:ID_FS_TYPE=ext4") {
			return nil
		}
	}
	return fmt.Errorf("realcufile: udev recorded no ext4 file system for %s in %s within 30 s", dev, db)
}

// ensureUdevd starts udevd unless one runs, noting that a harness started
// it. The caller holds the exclusive lock.
func ensureUdevd() error {
	if udevdRunning() {
		return nil
	}
	if err := run(udevd, "--daemon"); err != nil {
		return err
	}
	if err := os.WriteFile(startedPath, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat("/run/udev/control"); err == nil {
			return run("udevadm", "trigger", "--subsystem-match=block")
		}
	}
	return errors.New("realcufile: udevd started but /run/udev/control did not appear within 10 s")
}

// stopUdevd asks udevd to exit and waits until it has, so that the next
// setup (waiting for the lock) does not take an exiting udevd for a
// running one.
func stopUdevd() error {
	if err := run("udevadm", "control", "--exit"); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !udevdRunning() {
			return nil
		}
	}
	return errors.New("realcufile: udevd still runs 10 s after udevadm control --exit")
}

// udevdRunning reports whether a live process named systemd-udevd runs
// (a zombie one, exited but not reaped, does not count).
func udevdRunning() bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ...
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i || j+2 >= len(s) {
			continue
		}
		if s[i+1:j] == "systemd-udevd" && s[j+2] != 'Z' {
			return true
		}
	}
	return false
}

// Close unmounts, detaches the loop device and, when no other harness
// uses it, stops a udevd that a harness started. It is safe on a partial
// setup.
func (h *Harness) Close() error {
	var errs []error
	for i := len(h.undo) - 1; i >= 0; i-- {
		errs = append(errs, h.undo[i]())
	}
	h.undo = nil
	if h.lock != nil {
		fd := int(h.lock.Fd())
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if _, err := os.Stat(startedPath); err == nil {
				errs = append(errs, stopUdevd(), os.Remove(startedPath))
			}
		}
		errs = append(errs, h.lock.Close())
		h.lock = nil
	}
	return errors.Join(errs...)
}

// Env returns the environment that makes gdsload load lib over the double
// (KEY=VALUE): the double's libcudart and libcuda, its folder on
// LD_LIBRARY_PATH (libcufile dlopens libcuda.so.1), the cufile.json, the
// log file, and the shim where one is needed.
func (h *Harness) Env(lib Library) []string {
	env := []string{
		"GDSLOAD_LIBCUFILE=" + lib.Path,
		"GDSLOAD_LIBCUDART=" + h.Double.CUDART,
		"GDSLOAD_LIBCUDA=" + h.Double.CUDA,
		"LD_LIBRARY_PATH=" + h.Double.Dir,
		"CUFILE_ENV_PATH_JSON=" + h.JSONPath,
		"CUFILE_LOGFILE_PATH=" + h.LogFile,
	}
	if h.Preload != "" {
		env = append(env, "LD_PRELOAD="+h.Preload)
	}
	return env
}

func buildShim(work string) (string, error) {
	cc, err := fakecuda.Compiler()
	if err != nil {
		return "", err
	}
	src := filepath.Join(work, "procmodules.c")
	so := filepath.Join(work, "libprocmodules.so")
	if err := os.WriteFile(src, procModulesSource, 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", so, src, "-ldl").CombinedOutput(); err != nil {
		return "", fmt.Errorf("realcufile: building the /proc/modules shim: %w\n%s", err, out)
	}
	return so, nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("realcufile: %s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
