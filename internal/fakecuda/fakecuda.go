// Package fakecuda (internal/fakecuda; it was cufile/fakecuda) builds and
// drives a C test double of the parts of libcudart, libcufile and libcuda
// that gdsload calls, so the cufile bindings and the GPU data paths can be
// tested on machines without a GPU.
//
// The double is compiled from csrc/fakecuda.c with the system C compiler
// into one shared object, linked under the real libraries' names, and
// loaded through the same run-time loading code as the real ones (point
// GDSLOAD_LIBCUDART, GDSLOAD_LIBCUFILE and GDSLOAD_LIBCUDA at it, or use
// Libs.Config; make fakecuda writes it to build/fakecuda). Device memory
// is mapped PROT_NONE so host dereferences of device pointers fault;
// asynchronous copies run later on another thread; faults are injected
// with Control.
//
// Each route has a speed, in MiB/s, shared by the transfers on it as a
// saturated link is (0, the default: unlimited): cuFileRead's
// (FAKECUDA_GDS_MIBPS, "gds_mibps=N") and host-to-device copies'
// (FAKECUDA_H2D_MIBPS, "h2d_mibps=N"), so that tests can make either
// route the faster. cuFileGetVersion reports FAKECUDA_CUFILE_VERSION
// ("cufile_version=N"; 1160 by default), to stand for a library upgrade.
//
// The double also serves as libcuda.so.1 (its soname) for NVIDIA's real
// libcufile: it implements every driver entry point that cuFile 1.4
// (Debian's libcufile0) and 1.14 (PyPI's nvidia-cufile-cu12) look up, over
// the same device memory, streams and events as its runtime half
// (internal/realcufile runs gdsload's tests that way; FAKECUDA_TRACE names
// a file that gets one line per driver call). What the driver API holds
// is counted apart from Leaks (cu_allocs, cu_pinned, cu_streams,
// cu_events): libcufile keeps its bounce buffers until the process exits.
//
// Where the real libcufile and the double's own cuFile were found to
// differ, the double was changed, or gdsload was:
//   - cuFileHandleRegister: the real library fails with
//     CU_FILE_INTERNAL_ERROR (5030) on tmpfs and on any volume udev has
//     not recorded; the double registers any O_DIRECT descriptor (fault
//     handle_register gives the real failure). gdsload failed the whole
//     load; it now bounces that file and says why.
//   - cuFileDriverGetProperties: the real library answers after the
//     driver's last close (it opens it again implicitly); the double
//     refused with CU_FILE_DRIVER_NOT_INITIALIZED, and now answers.
//   - Driver references: the double counts them (counter driver_refs);
//     the real library logs "cuFile closing Driver" when one closes it.
//   - The real library never writes device memory from the host: it
//     copies its bounce buffers with cuMemcpyHtoDAsync on its own streams
//     (compat mode), which the double's driver half carries out.
//   - The double has no nvidia-fs or P2PDMA: against the real library the
//     mode is always compat.
//
// Several devices (FAKECUDA_DEVICES=N, "devices=N", up to MaxDevices):
// each has its own memory (FAKECUDA_MEM bytes each), PCI address
// (PCIBusID, from cudaDeviceGetPCIBusId) and NUMA node (NUMANode, in
// Root's sysfs). The double records how many devices had copies running
// at the same moment (counter max_busy_devices) and the bytes landed on
// each (landed:D); "wait_all_ms=N" (FAKECUDA_WAIT_ALL_MS) holds a
// device's copies until all devices are busy at once, up to N ms, once
// per reset, so parallel loads meet deterministically and serial ones
// never do; fault "fail_device:D:BYTES" fails device D's copies and
// cuFileReads once BYTES landed on it. Device memory stays out of the
// process's resident set, as a GPU's does: the double drops its view's
// pages from the page tables after each copy (the bytes stay in the
// memfd), so the peak RSS of a load measures its staging alone.
//
// Known limits of the driver half: IPC and managed memory are refused
// (CUDA_ERROR_NOT_SUPPORTED), cuStreamWaitEvent waits on the calling
// thread, and cuGetExportTable has no tables.
package fakecuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*gd_fake_control)(const char *);
typedef long long (*gd_fake_counter)(const char *);
typedef const char *(*gd_fake_misuse)(void);

static void *gd_fake_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *gd_fake_sym(void *h, const char *name) { return dlsym(h, name); }
static int gd_fake_call_control(void *f, const char *cmd) { return ((gd_fake_control)f)(cmd); }
static long long gd_fake_call_counter(void *f, const char *name) { return ((gd_fake_counter)f)(name); }
static const char *gd_fake_call_misuse(void *f) { return ((gd_fake_misuse)f)(); }
*/
import "C"

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"unsafe"

	"github.com/gdsload/gdsload/cufile"
)

//go:embed csrc/fakecuda.c
var source []byte

// Libs are the paths of a built double.
type Libs struct {
	// Dir holds the build.
	Dir string
	// Object is the shared object itself; CUDART, CuFile and CUDA are
	// symlinks to it under the real names, so the dynamic loader maps it
	// once and the three APIs share one state.
	Object, CUDART, CuFile, CUDA string
	// Root is a made-up system tree of a GPU machine with the NVIDIA
	// driver and nvidia-fs loaded (proc/driver/nvidia/version,
	// proc/driver/nvidia-fs/{version,stats}, run/udev) and each device's
	// NUMA node (sys/bus/pci/devices/PCIBusID(d)/numa_node: NUMANode),
	// for cufile.Config.Root.
	Root string
	// LogFile is where the double's "nocuda" fault logs, as libcufile
	// would (cufile.Config.LogFile, CUFILE_LOGFILE_PATH).
	LogFile string
}

// Build compiles the double into dir with cc (or $CC, or "gcc").
func Build(dir string) (*Libs, error) {
	src := filepath.Join(dir, "fakecuda.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return nil, err
	}
	l := layout(dir)
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-g", "-fvisibility=hidden", "-Wl,-soname,libcuda.so.1",
		"-o", l.Object, src, "-lpthread")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the CUDA test double with %s: %v\n%s", cc, err, out)
	}
	for _, link := range []string{l.CUDART, l.CuFile, l.CUDA} {
		os.Remove(link)
		if err := os.Symlink(filepath.Base(l.Object), link); err != nil {
			return nil, err
		}
	}
	files := map[string]string{
		"proc/driver/nvidia/version":    "NVRM version: fakecuda (the gdsload CUDA test double)\n",
		"proc/driver/nvidia-fs/version": "version: fakecuda\n",
		"proc/driver/nvidia-fs/stats":   "",
		"run/udev/control":              "",
	}
	for d := range MaxDevices {
		files[filepath.Join("sys/bus/pci/devices", PCIBusID(d), "numa_node")] = fmt.Sprintf("%d\n", NUMANode(d))
	}
	for name, text := range files {
		p := filepath.Join(l.Root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// MaxDevices is the most devices the double simulates (FAKECUDA_DEVICES,
// "devices=N").
const MaxDevices = 16

// PCIBusID is device d's PCI address, as the double's
// cudaDeviceGetPCIBusId gives it.
func PCIBusID(d int) string { return fmt.Sprintf("0000:%02x:00.0", 0x81+d) }

// NUMANode is the NUMA node of device d on the double's made-up machine
// (Root's sys/bus/pci/devices/ADDRESS/numa_node): two sockets, even
// devices on node 0, odd ones on node 1.
func NUMANode(d int) int { return d % 2 }

// Cached returns a build kept in the system's temporary folder under a name
// derived from the source, building it the first time (concurrent test
// processes may race: each builds privately and renames into place).
// Test binaries without their own TestMain cleanup use it.
func Cached() (*Libs, error) {
	sum := sha256.Sum256(source)
	dir := filepath.Join(os.TempDir(), "gdsload-fakecuda-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "libcuda.so.1")); err == nil {
		return layout(dir), nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "gdsload-fakecuda-build-")
	if err != nil {
		return nil, err
	}
	if _, err := Build(tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, os.ErrExist) {
			if _, serr := os.Stat(filepath.Join(dir, "libcuda.so.1")); serr != nil {
				return nil, err
			}
		}
	}
	return layout(dir), nil
}

func layout(dir string) *Libs {
	return &Libs{
		Dir:    dir,
		Object: filepath.Join(dir, "libfakecuda.so"),
		CUDART: filepath.Join(dir, "libcudart.so.13"),
		CuFile: filepath.Join(dir, "libcufile.so.0"),
		CUDA:   filepath.Join(dir, "libcuda.so.1"),
		Root:   filepath.Join(dir, "root"),
		// One file for every process using a cached build: the double
		// appends to it only under the "nocuda" fault.
		LogFile: filepath.Join(dir, "cufile.log"),
	}
}

// Config returns a cufile.Config that loads the double on its made-up
// GPU machine, logging to LogFile.
func (l *Libs) Config() cufile.Config {
	return cufile.Config{CuFile: l.CuFile, CUDART: l.CUDART, CUDA: l.CUDA, LogFile: l.LogFile, Root: l.Root}
}

// Env returns the environment variables that make cufile load the double,
// and libcufile's log go to LogFile.
func (l *Libs) Env() map[string]string {
	return map[string]string{
		"GDSLOAD_LIBCUDART":   l.CUDART,
		"GDSLOAD_LIBCUFILE":   l.CuFile,
		"GDSLOAD_LIBCUDA":     l.CUDA,
		"CUFILE_LOGFILE_PATH": l.LogFile,
	}
}

// Control drives the loaded double: its state is per process, so tests
// that change it must not run in parallel with tests that use it.
type Control struct {
	control, counter, misuse unsafe.Pointer // C function pointers
}

// Open maps the double (the same mapping cufile gets) and finds its
// control functions.
func (l *Libs) Open() (*Control, error) {
	cs := C.CString(l.Object)
	defer C.free(unsafe.Pointer(cs))
	h := C.gd_fake_open(cs)
	if h == nil {
		return nil, fmt.Errorf("dlopen %s failed", l.Object)
	}
	sym := func(name string) unsafe.Pointer {
		cn := C.CString(name)
		defer C.free(unsafe.Pointer(cn))
		return C.gd_fake_sym(h, cn)
	}
	c := &Control{control: sym("fakecuda_control"), counter: sym("fakecuda_counter"), misuse: sym("fakecuda_misuse")}
	if c.control == nil || c.counter == nil || c.misuse == nil {
		return nil, fmt.Errorf("%s lacks its control functions", l.Object)
	}
	return c, nil
}

// Do applies one command (see fakecuda_control in csrc/fakecuda.c):
// "reset" (to the settings of the FAKECUDA_* environment: FAKECUDA_FAIL,
// FAKECUDA_MODE, FAKECUDA_DEVICES, FAKECUDA_MEM, FAKECUDA_DELAY_US),
// "fault=NAME[:ARG]", "devices=N", "mode=nvfs|p2pdma|compat",
// "mem=BYTES", "delay_us=N", "wait_all_ms=N" (FAKECUDA_WAIT_ALL_MS).
// Faults: driver_open, nocuda (libcufile without libcuda.so.1: prints on
// standard output, writes cufile.log, fails with
// CU_FILE_NVFS_SETUP_ERROR), init, oom, copy, read_at:OFFSET, short_read,
// cufile_io, dmabuf, sync_memops, rdma_flush, fail_device:D[:BYTES].
func (c *Control) Do(cmd string) error {
	cs := C.CString(cmd)
	defer C.free(unsafe.Pointer(cs))
	if C.gd_fake_call_control(c.control, cs) != 0 {
		return fmt.Errorf("fakecuda: unknown command %q", cmd)
	}
	return nil
}

// Counter returns a live count: "allocs", "bufreg" (buffers registered
// with cuFile and not deregistered, freed or not), "pinned", "streams",
// "events", "handles", "driver_refs", "dmabufs" (dma-buf descriptors
// handed out and still open), "misuse" (refused misuses since the last
// reset; see Misuse), and "async_bytes", "cufile_reads",
// "cufile_unaligned" (cuFileReads at an unaligned file offset or device
// address), "rdma_flushes", which count up from process start, and
// "max_busy_devices" (the most devices with copies running at once) and
// "landed:D" (bytes copied or read into device D), since the last reset.
func (c *Control) Counter(name string) int64 {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return int64(C.gd_fake_call_counter(c.counter, cs))
}

// Misuse says what the last refused misuse was: a cuFile handle used or
// deregistered after its deregistration, memory freed or a stream
// destroyed with copies pending, an unknown pointer freed. "" for none.
func (c *Control) Misuse() string {
	return C.GoString(C.gd_fake_call_misuse(c.misuse))
}
