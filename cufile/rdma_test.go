package cufile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, d1.FlushGPUDirectRDMAWrites())
	require.NoError(t, d1.FlushGPUDirectRDMAWrites())
	got := control.Counter("rdma_flushes") - before
	assert.EqualValues(t, 2, got, "the double counted %d flushes, want 2", got)

	require.NoError(t, control.Do("fault=rdma_flush"))
	err := d1.FlushGPUDirectRDMAWrites()
	var ce *cufile.CUDAError
	if assert.ErrorAs(t, err, &ce, "flush with an injected fault: %v, want a CUDAError 700 naming the call and GPU 1", err) {
		assert.Equal(t, 700, ce.Code, "flush with an injected fault: %v, want a CUDAError 700 naming the call and GPU 1", err)
	}
	assert.ErrorContains(t, err, "cudaDeviceFlushGPUDirectRDMAWrites(current device, to owner) on GPU 1", "flush with an injected fault: %v, want a CUDAError 700 naming the call and GPU 1", err)

	require.NoError(t, control.Do("fault="))
	require.NoError(t, control.Do("devices=0"))
	err = d1.FlushGPUDirectRDMAWrites()
	assert.ErrorIs(t, err, cufile.ErrUnavailable, "flush with no GPU: %v, want ErrUnavailable", err)
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
	require.NoError(t, err, "building a double without cudaDeviceFlushGPUDirectRDMAWrites: %v\n%s", err, out)
	rt, err := cufile.OpenRuntime(cufile.Config{CUDART: lib})
	require.NoError(t, err, "a libcudart without the optional flush must still load: %v", err)
	d, err := rt.Device(0)
	require.NoError(t, err)
	err = d.FlushGPUDirectRDMAWrites()
	require.ErrorIs(t, err, cufile.ErrUnavailable, "flush without the symbol: %v, want ErrUnavailable", err)
	for _, want := range []string{"cudaDeviceFlushGPUDirectRDMAWrites", "CUDA 11.3 or newer", lib, "GDSLOAD_LIBCUDART"} {
		assert.ErrorContains(t, err, want, "error %q does not mention %q", err, want)
	}
}

// RDMAMemory exports page-aligned dma-bufs and says where the asked
// address lies in them, marks allocations for peermem, flushes through the
// runtime, and passes the driver's refusals on.
func TestRDMAMemory(t *testing.T) {
	reset(t)
	drv, err := cufile.OpenCUDADriver(fake.Config())
	require.NoError(t, err)
	dev := openDevice(t, 0)
	m, err := cufile.NewRDMAMemory(drv, dev)
	require.NoError(t, err)
	p, err := dev.Malloc(1 << 20)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()

	// An unaligned piece in the middle: the double refuses unaligned
	// ranges, so success shows the range was aligned.
	fd, off, err := m.DmaBufFd(uintptr(p)+4096+100, 5000)
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	unix.Close(fd)
	assert.EqualValues(t, 100, off, "offset of the address in its dma-buf = %d, want 100", off)
	_, _, err = m.DmaBufFd(uintptr(p), 0)
	assert.Error(t, err, "a zero-length export succeeded")
	require.NoError(t, m.SyncMemops(uintptr(p)+4096))
	before := control.Counter("rdma_flushes")
	require.NoError(t, m.FlushRDMAWrites())
	assert.Equal(t, before+1, control.Counter("rdma_flushes"), "FlushRDMAWrites did not reach cudaDeviceFlushGPUDirectRDMAWrites")

	require.NoError(t, control.Do("fault=dmabuf"))
	_, _, err = m.DmaBufFd(uintptr(p), 4096)
	var de *cufile.DriverAPIError
	if assert.ErrorAs(t, err, &de, "dma-buf export on a driver without dma-buf: %v, want CUresult 801 naming the call", err) {
		assert.Equal(t, 801, de.Code, "dma-buf export on a driver without dma-buf: %v, want CUresult 801 naming the call", err)
	}
	assert.ErrorContains(t, err, "cuMemGetHandleForAddressRange", "dma-buf export on a driver without dma-buf: %v, want CUresult 801 naming the call", err)
	require.NoError(t, control.Do("fault=sync_memops"))
	err = m.SyncMemops(uintptr(p))
	assert.ErrorAs(t, err, &de, "SYNC_MEMOPS refused: %v, want a DriverAPIError naming it", err)
	assert.ErrorContains(t, err, "SYNC_MEMOPS", "SYNC_MEMOPS refused: %v, want a DriverAPIError naming it", err)
}
