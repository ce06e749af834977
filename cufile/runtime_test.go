package cufile_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/gdsload/gdsload/cufile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceCount(t *testing.T) {
	for _, tc := range []struct {
		cmd     string
		want    int
		errText string
	}{
		{"devices=1", 1, ""},
		{"devices=3", 3, ""},
		{"devices=0", 0, "no CUDA-capable device"},
		{"fault=init", 0, "CUDA driver version is insufficient"},
		{"fault=nodriver", 0, "no NVIDIA driver installed (cudaGetDeviceCount: cudaErrorInsufficientDriver, driver version 0)"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			reset(t, tc.cmd)
			n, err := openRuntime(t).DeviceCount()
			assert.Equal(t, tc.want, n, "DeviceCount = %d, want %d", n, tc.want)
			if tc.errText == "" {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, cufile.ErrUnavailable, "DeviceCount error %v, want ErrUnavailable saying %q", err, tc.errText)
			assert.ErrorContains(t, err, tc.errText, "DeviceCount error %v, want ErrUnavailable saying %q", err, tc.errText)
		})
	}
}

func TestDeviceOutOfRange(t *testing.T) {
	reset(t, "devices=2")
	rt := openRuntime(t)
	_, err := rt.Device(1)
	require.NoError(t, err)
	_, err = rt.Device(2)
	assert.ErrorIs(t, err, cufile.ErrUnavailable, "Device(2) of 2: %v", err)
	assert.ErrorContains(t, err, "GPU 2 does not exist: 2 GPU(s) visible", "Device(2) of 2: %v", err)
}

func TestVersions(t *testing.T) {
	reset(t)
	rt := openRuntime(t)
	d, err := rt.DriverVersion()
	require.NoError(t, err)
	r, err := rt.RuntimeVersion()
	require.NoError(t, err)
	assert.EqualValues(t, 13000, d, "driver %d runtime %d library %q", d, r, rt.Library().Version)
	assert.EqualValues(t, 13000, r, "driver %d runtime %d library %q", d, r, rt.Library().Version)
	assert.Equal(t, "13.0", rt.Library().Version, "driver %d runtime %d library %q", d, r, rt.Library().Version)
}

// Allocations land on the device they were made for, whatever thread the
// goroutine runs on: Device methods make their device current first.
func TestAllocationsLandOnTheirDevice(t *testing.T) {
	reset(t, "devices=2", "mem=67108864")
	rt := openRuntime(t)
	d0, err := rt.Device(0)
	require.NoError(t, err)
	d1, err := rt.Device(1)
	require.NoError(t, err)
	p, err := d1.Malloc(8 << 20)
	require.NoError(t, err)
	free0, total0, err := d0.MemInfo()
	require.NoError(t, err)
	free1, _, err := d1.MemInfo()
	require.NoError(t, err)
	assert.EqualValues(t, 64<<20, total0, "after 8 MiB on GPU 1: GPU 0 free %d of %d, GPU 1 free %d", free0, total0, free1)
	assert.EqualValues(t, 64<<20, free0, "after 8 MiB on GPU 1: GPU 0 free %d of %d, GPU 1 free %d", free0, total0, free1)
	assert.EqualValues(t, 56<<20, free1, "after 8 MiB on GPU 1: GPU 0 free %d of %d, GPU 1 free %d", free0, total0, free1)
	require.NoError(t, d1.Free(p))
}

func TestSyncCopyRoundTrip(t *testing.T) {
	reset(t)
	d := openDevice(t, 0)
	want := make([]byte, 1<<20+123)
	for i := range want {
		want[i] = byte(rand.IntN(256))
	}
	p, err := d.Malloc(int64(len(want)))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free(p)) }()
	require.NoError(t, d.CopyToDevice(p, want))
	got := make([]byte, len(want))
	require.NoError(t, d.CopyFromDevice(got, p))
	require.True(t, bytes.Equal(got, want), "bytes differ after a round trip through device memory")
	// Out of the allocation: refused, not a crash.
	err = d.CopyFromDevice(make([]byte, 10), p+cufile.DevicePtr(len(want)))
	assert.Error(t, err, "copy past the end of an allocation succeeded")
}

func TestOutOfMemory(t *testing.T) {
	reset(t, "mem=1048576")
	d := openDevice(t, 0)
	_, err := d.Malloc(2 << 20)
	require.ErrorIs(t, err, cufile.ErrOutOfMemory, "Malloc beyond device memory: %v, want ErrOutOfMemory", err)
	for _, want := range []string{"cudaMalloc(2097152 bytes) on GPU 0", "out of memory"} {
		assert.ErrorContains(t, err, want, "error %q does not say %q", err, want)
	}
}

// The double's copies run later, reading the pinned buffer when they run:
// the test shows that a buffer rewritten before its event completed lands
// the new bytes, and that an event reports not-ready until the copy ran.
func TestAsyncCopyRunsLater(t *testing.T) {
	reset(t, "delay_us=50000")
	d := openDevice(t, 0)
	buf, err := d.AllocPinned(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	p, err := d.Malloc(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free(p)) }()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Destroy()) }()
	ev, err := d.NewEvent()
	require.NoError(t, err)
	defer func() { require.NoError(t, ev.Destroy()) }()

	copy(buf.Bytes(), bytes.Repeat([]byte{1}, 4096))
	require.NoError(t, s.CopyToDeviceAsync(p, buf, 0, 4096))
	require.NoError(t, ev.Record(s))
	done, err := ev.Query()
	require.NoError(t, err, "event done=%v err=%v right after queueing a delayed copy", done, err)
	require.False(t, done, "event done=%v err=%v right after queueing a delayed copy", done, err)
	copy(buf.Bytes(), bytes.Repeat([]byte{2}, 4096)) // the bug the ring must avoid
	require.NoError(t, ev.Synchronize())
	done, err = ev.Query()
	require.NoError(t, err, "event done=%v err=%v after Synchronize", done, err)
	require.True(t, done, "event done=%v err=%v after Synchronize", done, err)
	got := make([]byte, 4096)
	require.NoError(t, d.CopyFromDevice(got, p))
	assert.EqualValues(t, 2, got[0], "device byte %d: the double copied at queue time, not when the copy ran", got[0])
	// And back, asynchronously.
	require.NoError(t, s.CopyFromDeviceAsync(buf, 0, 4096, p))
	require.NoError(t, s.Synchronize())
	assert.EqualValues(t, 2, buf.Bytes()[4095], "device-to-host copy brought %d", buf.Bytes()[4095])
}

func TestAsyncCopyFailureSurfacesAtSync(t *testing.T) {
	reset(t)
	d := openDevice(t, 0)
	buf, err := d.AllocPinned(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	p, err := d.Malloc(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free(p)) }()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { _ = s.Destroy() }()
	require.NoError(t, control.Do("fault=copy"))
	require.NoError(t, s.CopyToDeviceAsync(p, buf, 0, 4096))
	err = s.Synchronize()
	var ce *cufile.CUDAError
	require.ErrorAs(t, err, &ce, "Synchronize after a failed copy: %v, want cudaErrorIllegalAddress", err)
	require.Equal(t, 700, ce.Code, "Synchronize after a failed copy: %v, want cudaErrorIllegalAddress", err)
	require.ErrorContains(t, err, "illegal memory access", "Synchronize after a failed copy: %v, want cudaErrorIllegalAddress", err)
	err = s.CopyToDeviceAsync(p, buf, 0, 8192)
	assert.ErrorContains(t, err, "outside buffer of 4096 bytes", "copy past the pinned buffer: %v", err)
}

func TestRegisterHost(t *testing.T) {
	reset(t)
	d := openDevice(t, 0)
	mem := make([]byte, 8192) // the double does not keep it; real code uses mmap'd memory
	h, err := d.RegisterHost(mem)
	require.NoError(t, err)
	require.NoError(t, h.Unregister())
	assert.Error(t, h.Unregister(), "second Unregister succeeded")
}

// TestDeviceMemoryFaultsOnHostAccess runs a child that dereferences a
// device pointer: it must die, as on a real GPU, so tests catch code that
// reads device memory from the host.
func TestDeviceMemoryFaultsOnHostAccess(t *testing.T) {
	if os.Getenv("GDSLOAD_TEST_HELPER") == "deref" {
		rt, err := cufile.OpenRuntime(cufile.Config{})
		require.NoError(t, err)
		d, err := rt.Device(0)
		require.NoError(t, err)
		p, err := d.Malloc(4096)
		require.NoError(t, err)
		b := *(**byte)(unsafe.Pointer(&p))
		println("read", *b) // must fault
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeviceMemoryFaultsOnHostAccess$")
	cmd.Env = append(os.Environ(), "GDSLOAD_TEST_HELPER=deref")
	for k, v := range fake.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "host read of device memory did not fault: %v\n%s", err, out)
	require.Contains(t, string(out), "unexpected fault address", "host read of device memory did not fault: %v\n%s", err, out)
}
