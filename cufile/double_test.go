package cufile_test

// The test double refuses misuse a real GPU would punish later, or only
// sometimes: each rule has a test here.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/cufile"
)

// expectMisuse checks that the double counted a refused misuse saying
// what, then clears the count so the test's leak check passes.
func expectMisuse(t *testing.T, what string) {
	t.Helper()
	n, m := control.Counter("misuse"), control.Misuse()
	assert.NotZero(t, n, "the double counted %d misuses (last %q), want one saying %q", n, m, what)
	assert.Contains(t, m, what, "the double counted %d misuses (last %q), want one saying %q", n, m, what)
	require.NoError(t, control.Do("reset"))
}

// directFile is a 64 KiB file opened with O_DIRECT, registered with cuFile.
func directFile(t *testing.T, d *cufile.Driver) (*os.File, *cufile.FileHandle) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(name, make([]byte, 64<<10), 0o644))
	f, err := os.OpenFile(name, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Skipf("O_DIRECT not supported here: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	h, err := d.RegisterFile(int(f.Fd()))
	require.NoError(t, err)
	return f, h
}

// A handle used after cuFileHandleDeregister fails with
// CU_FILE_HANDLE_NOT_REGISTERED instead of reading freed memory.
func TestDoubleRefusesDeregisteredHandle(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	_, h := directFile(t, drv)
	p, err := dev.Malloc(8192)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()
	h.Close()
	var n int64
	err = dev.Do(func() (err error) { n, err = h.Read(p, 4096, 0, 0); return err })
	var oe *cufile.OpError
	if assert.ErrorAs(t, err, &oe, "read through a deregistered handle: %d bytes, %v; want CU_FILE_HANDLE_NOT_REGISTERED (5027)", n, err) {
		assert.Equal(t, 5027, oe.Code, "read through a deregistered handle: %d bytes, %v; want CU_FILE_HANDLE_NOT_REGISTERED (5027)", n, err)
	}
	expectMisuse(t, "handle not registered")
}

// Memory freed while registered with cuFile leaves its registration
// counted as a leak.
func TestDoubleCountsRegistrationOfFreedMemory(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	p, err := dev.Malloc(8192)
	require.NoError(t, err)
	require.NoError(t, dev.Do(func() error { return drv.RegisterBuffer(p, 8192) }))
	require.NoError(t, dev.Free(p))
	n := control.Counter("bufreg")
	assert.EqualValues(t, 1, n, "registrations after freeing registered memory: %d, want the leak counted (1)", n)
	require.NoError(t, control.Do("reset")) // forget the leak made on purpose
}

// Freeing memory, or destroying a stream, while an async copy still uses
// it is refused: the caller must wait for the copy first.
func TestDoubleRefusesFreeWithCopiesPending(t *testing.T) {
	for _, tc := range []struct {
		name, what string
		free       func(dev *cufile.Device, p cufile.DevicePtr, buf *cufile.PinnedBuffer, s *cufile.Stream) error
	}{
		{"stream", "cudaStreamDestroy with async copies pending", func(_ *cufile.Device, _ cufile.DevicePtr, _ *cufile.PinnedBuffer, s *cufile.Stream) error {
			return s.Destroy()
		}},
		{"pinned", "cudaFreeHost with async copies pending", func(_ *cufile.Device, _ cufile.DevicePtr, buf *cufile.PinnedBuffer, _ *cufile.Stream) error {
			return buf.Free()
		}},
		{"device", "cudaFree of device memory with async copies pending", func(dev *cufile.Device, p cufile.DevicePtr, _ *cufile.PinnedBuffer, _ *cufile.Stream) error {
			return dev.Free(p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset(t, "delay_us=300000")
			dev := openDevice(t, 0)
			buf, err := dev.AllocPinned(4096)
			require.NoError(t, err)
			p, err := dev.Malloc(4096)
			require.NoError(t, err)
			s, err := dev.NewStream()
			require.NoError(t, err)
			require.NoError(t, s.CopyToDeviceAsync(p, buf, 0, 4096))
			require.Error(t, tc.free(dev, p, buf, s), "%s freed with a copy pending", tc.name)
			require.NoError(t, s.Synchronize())
			expectMisuse(t, tc.what)
			require.NoError(t, s.Destroy())
			require.NoError(t, dev.Free(p))
			require.NoError(t, buf.Free())
		})
	}
}

// cuFileWrite checks its device pointer as cuFileRead does: the base must
// be in an allocation of the calling thread's device.
func TestDoubleChecksCuFileWriteLikeRead(t *testing.T) {
	reset(t, "devices=2")
	d0, d1 := openDevice(t, 0), openDevice(t, 1)
	drv := openDriver(t)
	_, h := directFile(t, drv)
	p, err := d1.Malloc(8192)
	require.NoError(t, err)
	defer func() { require.NoError(t, d1.Free(p)) }()
	for _, tc := range []struct {
		name string
		on   *cufile.Device
		base cufile.DevicePtr
		off  int64
		code int
	}{
		{"other device", d0, p, 0, 5015},                  // CU_FILE_CUDA_CONTEXT_MISMATCH
		{"base outside", d1, 4096, int64(p) - 4096, 5012}, // CU_FILE_CUDA_POINTER_INVALID
		{"past the end", d1, p, 8192, 5014},               // CU_FILE_CUDA_POINTER_RANGE_ERROR
	} {
		err := tc.on.Do(func() error { _, err := h.Write(tc.base, 4096, 0, tc.off); return err })
		var oe *cufile.OpError
		if assert.ErrorAs(t, err, &oe, "%s: cuFileWrite gave %v, want status %d", tc.name, err, tc.code) {
			assert.Equal(t, tc.code, oe.Code, "%s: cuFileWrite gave %v, want status %d", tc.name, err, tc.code)
		}
		err = tc.on.Do(func() error { _, err := h.Read(tc.base, 4096, 0, tc.off); return err })
		if assert.ErrorAs(t, err, &oe, "%s: cuFileRead gave %v, want status %d", tc.name, err, tc.code) {
			assert.Equal(t, tc.code, oe.Code, "%s: cuFileRead gave %v, want status %d", tc.name, err, tc.code)
		}
	}
	require.NoError(t, d1.Do(func() error { _, err := h.Write(p, 4096, 0, 0); return err }))
	h.Close()
}

// An event stays usable after the stream it was recorded on is destroyed,
// and says complete, even when a new stream takes the old one's memory.
func TestDoubleEventOutlivesItsStream(t *testing.T) {
	reset(t, "delay_us=1000")
	dev := openDevice(t, 0)
	buf, err := dev.AllocPinned(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	p, err := dev.Malloc(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()
	ev, err := dev.NewEvent()
	require.NoError(t, err)
	defer func() { require.NoError(t, ev.Destroy()) }()
	s1, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s1.CopyToDeviceAsync(p, buf, 0, 4096))
	require.NoError(t, ev.Record(s1))
	require.NoError(t, s1.Synchronize())
	require.NoError(t, s1.Destroy())

	require.NoError(t, control.Do("delay_us=300000"))
	s2, err := dev.NewStream() // may reuse s1's memory
	require.NoError(t, err)
	require.NoError(t, s2.CopyToDeviceAsync(p, buf, 0, 4096))
	done, err := ev.Query()
	assert.NoError(t, err, "event of a destroyed stream: done=%v err=%v, want complete", done, err)
	assert.True(t, done, "event of a destroyed stream: done=%v err=%v, want complete", done, err)
	require.NoError(t, ev.Synchronize())
	require.NoError(t, s2.Synchronize())
	require.NoError(t, s2.Destroy())
}

// Registering host memory twice fails, as CUDA's cudaHostRegister does
// (cudaErrorHostMemoryAlreadyRegistered).
func TestDoubleRefusesDoubleHostRegister(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	mem, err := unix.Mmap(-1, 0, 16384, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	h, err := dev.RegisterHost(mem)
	require.NoError(t, err)
	_, err = dev.RegisterHost(mem[4096:8192])
	var ce *cufile.CUDAError
	if assert.ErrorAs(t, err, &ce, "registering registered memory again: %v, want cudaErrorHostMemoryAlreadyRegistered (712)", err) {
		assert.Equal(t, 712, ce.Code, "registering registered memory again: %v, want cudaErrorHostMemoryAlreadyRegistered (712)", err)
	}
	require.NoError(t, h.Unregister())
}

// dma-buf descriptors handed out by cuMemGetHandleForAddressRange count as
// leaks until closed.
func TestDoubleCountsDmaBufs(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv, err := cufile.OpenCUDADriver(fake.Config())
	require.NoError(t, err)
	mem, err := cufile.NewRDMAMemory(drv, dev)
	require.NoError(t, err)
	p, err := dev.Malloc(1 << 16)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()
	fd, _, err := mem.DmaBufFd(uintptr(p), 1<<16)
	require.NoError(t, err)
	n := control.Counter("dmabufs")
	assert.EqualValues(t, 1, n, "dma-bufs open: %d, want 1", n)
	require.NoError(t, unix.Close(fd))
	n = control.Counter("dmabufs")
	assert.Zero(t, n, "dma-bufs open after close: %d, want 0", n)
}

// A cuFile handle is deregistered before its file descriptor is closed:
// the other order is refused as misuse.
func TestDoubleRefusesDeregisterAfterClose(t *testing.T) {
	reset(t)
	drv := openDriver(t)
	f, h := directFile(t, drv)
	require.NoError(t, f.Close())
	h.Close()
	expectMisuse(t, "after its file descriptor was closed")
}

// Reads reach the allocation they are meant for when allocations sit back
// to back: the double hands device addresses out downwards, so the base
// of one allocation is the end of the one made after it (sizes of whole
// pages), and it once took that later one for a read into the earlier,
// failing with a range error (CU_FILE_CUDA_POINTER_RANGE_ERROR).
func TestDoubleBackToBackAllocations(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	_, h := directFile(t, drv)
	defer h.Close()
	var ptrs []cufile.DevicePtr
	for range 4 {
		p, err := dev.Malloc(8192)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	defer func() {
		for _, p := range ptrs {
			require.NoError(t, dev.Free(p))
		}
	}()
	for i, p := range ptrs {
		if i > 0 {
			require.Equal(t, ptrs[i-1], ptrs[i]+8192, "allocation %d at %#x, not just below %#x", i, uint64(p), uint64(ptrs[i-1]))
		}
		require.NoError(t, dev.Do(func() error { _, err := h.Read(p, 8192, 0, 0); return err }))
		require.NoError(t, dev.Do(func() error { _, err := h.Write(p, 4096, 0, 4096); return err }))
	}
}
