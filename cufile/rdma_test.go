package cufile_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/rdmafs"
)

// RDMAMemory is what an rdmafs client takes to read into GPU memory; the
// packages do not import each other, so the match is checked here.
var _ rdmafs.DeviceMemory = (*cufile.RDMAMemory)(nil)

// FlushGPUDirectRDMAWrites reaches cudaDeviceFlushGPUDirectRDMAWrites with
// the device current and the enum values of driver_types.h (the double
// refuses any other target or scope), and reports its failures.
func TestFlushGPUDirectRDMAWrites(t *testing.T) {
	reset(t, "devices=2")
	d1 := openDevice(t, 1)
	before := control.Counter("rdma_flushes")
	must(t, d1.FlushGPUDirectRDMAWrites())
	must(t, d1.FlushGPUDirectRDMAWrites())
	if got := control.Counter("rdma_flushes") - before; got != 2 {
		t.Errorf("the double counted %d flushes, want 2", got)
	}

	must(t, control.Do("fault=rdma_flush"))
	err := d1.FlushGPUDirectRDMAWrites()
	var ce *cufile.CUDAError
	if !errors.As(err, &ce) || ce.Code != 700 || !strings.Contains(err.Error(), "cudaDeviceFlushGPUDirectRDMAWrites(current device, to owner) on GPU 1") {
		t.Errorf("flush with an injected fault: %v, want a CUDAError 700 naming the call and GPU 1", err)
	}

	must(t, control.Do("fault="))
	must(t, control.Do("devices=0"))
	if err := d1.FlushGPUDirectRDMAWrites(); !errors.Is(err, cufile.ErrUnavailable) {
		t.Errorf("flush with no GPU: %v, want ErrUnavailable", err)
	}
}

// A libcudart older than CUDA 11.3 lacks the flush: the runtime still
// loads (the symbol is optional) and the flush fails with ErrUnavailable
// naming the symbol, the library and the CUDA version needed.
func TestFlushGPUDirectRDMAWritesMissingSymbol(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libcudart.so.11")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-DFAKECUDA_NO_RDMA_FLUSH",
		"-o", lib, filepath.Join("..", "internal", "fakecuda", "csrc", "fakecuda.c"), "-lpthread").CombinedOutput()
	if err != nil {
		t.Fatalf("building a double without cudaDeviceFlushGPUDirectRDMAWrites: %v\n%s", err, out)
	}
	rt, err := cufile.OpenRuntime(cufile.Config{CUDART: lib})
	if err != nil {
		t.Fatalf("a libcudart without the optional flush must still load: %v", err)
	}
	d, err := rt.Device(0)
	must(t, err)
	err = d.FlushGPUDirectRDMAWrites()
	if !errors.Is(err, cufile.ErrUnavailable) {
		t.Fatalf("flush without the symbol: %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"cudaDeviceFlushGPUDirectRDMAWrites", "CUDA 11.3 or newer", lib, "GDSLOAD_LIBCUDART"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// RDMAMemory exports page-aligned dma-bufs and says where the asked
// address lies in them, marks allocations for peermem, flushes through the
// runtime, and passes the driver's refusals on.
func TestRDMAMemory(t *testing.T) {
	reset(t)
	drv, err := cufile.OpenCUDADriver(fake.Config())
	must(t, err)
	dev := openDevice(t, 0)
	m, err := cufile.NewRDMAMemory(drv, dev)
	must(t, err)
	p, err := dev.Malloc(1 << 20)
	must(t, err)
	defer func() { must(t, dev.Free(p)) }()

	// An unaligned piece in the middle: the double refuses unaligned
	// ranges, so success shows the range was aligned.
	fd, off, err := m.DmaBufFd(uintptr(p)+4096+100, 5000)
	must(t, err)
	var st unix.Stat_t
	must(t, unix.Fstat(fd, &st))
	unix.Close(fd)
	if off != 100 {
		t.Errorf("offset of the address in its dma-buf = %d, want 100", off)
	}
	if _, _, err := m.DmaBufFd(uintptr(p), 0); err == nil {
		t.Error("a zero-length export succeeded")
	}
	must(t, m.SyncMemops(uintptr(p)+4096))
	before := control.Counter("rdma_flushes")
	must(t, m.FlushRDMAWrites())
	if control.Counter("rdma_flushes") != before+1 {
		t.Error("FlushRDMAWrites did not reach cudaDeviceFlushGPUDirectRDMAWrites")
	}

	must(t, control.Do("fault=dmabuf"))
	_, _, err = m.DmaBufFd(uintptr(p), 4096)
	var de *cufile.DriverAPIError
	if !errors.As(err, &de) || de.Code != 801 || !strings.Contains(err.Error(), "cuMemGetHandleForAddressRange") {
		t.Errorf("dma-buf export on a driver without dma-buf: %v, want CUresult 801 naming the call", err)
	}
	must(t, control.Do("fault=sync_memops"))
	if err := m.SyncMemops(uintptr(p)); !errors.As(err, &de) || !strings.Contains(err.Error(), "SYNC_MEMOPS") {
		t.Errorf("SYNC_MEMOPS refused: %v, want a DriverAPIError naming it", err)
	}
}
