package cufile_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/gdsload/gdsload/cufile"
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
			if n != tc.want {
				t.Errorf("DeviceCount = %d, want %d", n, tc.want)
			}
			if tc.errText == "" {
				must(t, err)
				return
			}
			if !errors.Is(err, cufile.ErrUnavailable) || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("DeviceCount error %v, want ErrUnavailable saying %q", err, tc.errText)
			}
		})
	}
}

func TestDeviceOutOfRange(t *testing.T) {
	reset(t, "devices=2")
	rt := openRuntime(t)
	if _, err := rt.Device(1); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Device(2)
	if !errors.Is(err, cufile.ErrUnavailable) || !strings.Contains(err.Error(), "GPU 2 does not exist: 2 GPU(s) visible") {
		t.Errorf("Device(2) of 2: %v", err)
	}
}

func TestVersions(t *testing.T) {
	reset(t)
	rt := openRuntime(t)
	d, err := rt.DriverVersion()
	must(t, err)
	r, err := rt.RuntimeVersion()
	must(t, err)
	if d != 13000 || r != 13000 || rt.Library().Version != "13.0" {
		t.Errorf("driver %d runtime %d library %q", d, r, rt.Library().Version)
	}
}

// Allocations land on the device they were made for, whatever thread the
// goroutine runs on: Device methods make their device current first.
func TestAllocationsLandOnTheirDevice(t *testing.T) {
	reset(t, "devices=2", "mem=67108864")
	rt := openRuntime(t)
	d0, err := rt.Device(0)
	must(t, err)
	d1, err := rt.Device(1)
	must(t, err)
	p, err := d1.Malloc(8 << 20)
	must(t, err)
	free0, total0, err := d0.MemInfo()
	must(t, err)
	free1, _, err := d1.MemInfo()
	must(t, err)
	if total0 != 64<<20 || free0 != 64<<20 || free1 != 56<<20 {
		t.Errorf("after 8 MiB on GPU 1: GPU 0 free %d of %d, GPU 1 free %d", free0, total0, free1)
	}
	must(t, d1.Free(p))
}

func TestSyncCopyRoundTrip(t *testing.T) {
	reset(t)
	d := openDevice(t, 0)
	want := make([]byte, 1<<20+123)
	for i := range want {
		want[i] = byte(rand.IntN(256))
	}
	p, err := d.Malloc(int64(len(want)))
	must(t, err)
	defer func() { must(t, d.Free(p)) }()
	must(t, d.CopyToDevice(p, want))
	got := make([]byte, len(want))
	must(t, d.CopyFromDevice(got, p))
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ after a round trip through device memory")
	}
	// Out of the allocation: refused, not a crash.
	if err := d.CopyFromDevice(make([]byte, 10), p+cufile.DevicePtr(len(want))); err == nil {
		t.Error("copy past the end of an allocation succeeded")
	}
}

func TestOutOfMemory(t *testing.T) {
	reset(t, "mem=1048576")
	d := openDevice(t, 0)
	_, err := d.Malloc(2 << 20)
	if !errors.Is(err, cufile.ErrOutOfMemory) {
		t.Fatalf("Malloc beyond device memory: %v, want ErrOutOfMemory", err)
	}
	for _, want := range []string{"cudaMalloc(2097152 bytes) on GPU 0", "out of memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// The double's copies run later, reading the pinned buffer when they run:
// the test shows that a buffer rewritten before its event completed lands
// the new bytes, and that an event reports not-ready until the copy ran.
func TestAsyncCopyRunsLater(t *testing.T) {
	reset(t, "delay_us=50000")
	d := openDevice(t, 0)
	buf, err := d.AllocPinned(4096)
	must(t, err)
	defer func() { must(t, buf.Free()) }()
	p, err := d.Malloc(4096)
	must(t, err)
	defer func() { must(t, d.Free(p)) }()
	s, err := d.NewStream()
	must(t, err)
	defer func() { must(t, s.Destroy()) }()
	ev, err := d.NewEvent()
	must(t, err)
	defer func() { must(t, ev.Destroy()) }()

	copy(buf.Bytes(), bytes.Repeat([]byte{1}, 4096))
	must(t, s.CopyToDeviceAsync(p, buf, 0, 4096))
	must(t, ev.Record(s))
	if done, err := ev.Query(); err != nil || done {
		t.Fatalf("event done=%v err=%v right after queueing a delayed copy", done, err)
	}
	copy(buf.Bytes(), bytes.Repeat([]byte{2}, 4096)) // the bug the ring must avoid
	must(t, ev.Synchronize())
	if done, err := ev.Query(); err != nil || !done {
		t.Fatalf("event done=%v err=%v after Synchronize", done, err)
	}
	got := make([]byte, 4096)
	must(t, d.CopyFromDevice(got, p))
	if got[0] != 2 {
		t.Errorf("device byte %d: the double copied at queue time, not when the copy ran", got[0])
	}
	// And back, asynchronously.
	must(t, s.CopyFromDeviceAsync(buf, 0, 4096, p))
	must(t, s.Synchronize())
	if buf.Bytes()[4095] != 2 {
		t.Errorf("device-to-host copy brought %d", buf.Bytes()[4095])
	}
}

func TestAsyncCopyFailureSurfacesAtSync(t *testing.T) {
	reset(t)
	d := openDevice(t, 0)
	buf, err := d.AllocPinned(4096)
	must(t, err)
	defer func() { must(t, buf.Free()) }()
	p, err := d.Malloc(4096)
	must(t, err)
	defer func() { must(t, d.Free(p)) }()
	s, err := d.NewStream()
	must(t, err)
	defer func() { _ = s.Destroy() }()
	must(t, control.Do("fault=copy"))
	must(t, s.CopyToDeviceAsync(p, buf, 0, 4096))
	err = s.Synchronize()
	var ce *cufile.CUDAError
	if !errors.As(err, &ce) || ce.Code != 700 || !strings.Contains(err.Error(), "illegal memory access") {
		t.Fatalf("Synchronize after a failed copy: %v, want cudaErrorIllegalAddress", err)
	}
	if err := s.CopyToDeviceAsync(p, buf, 0, 8192); err == nil || !strings.Contains(err.Error(), "outside buffer of 4096 bytes") {
		t.Errorf("copy past the pinned buffer: %v", err)
	}
}

func TestRegisterHost(t *testing.T) {
	reset(t)
	d := openDevice(t, 0)
	mem := make([]byte, 8192) // the double does not keep it; real code uses mmap'd memory
	h, err := d.RegisterHost(mem)
	must(t, err)
	must(t, h.Unregister())
	if err := h.Unregister(); err == nil {
		t.Error("second Unregister succeeded")
	}
}

// TestDeviceMemoryFaultsOnHostAccess runs a child that dereferences a
// device pointer: it must die, as on a real GPU, so tests catch code that
// reads device memory from the host.
func TestDeviceMemoryFaultsOnHostAccess(t *testing.T) {
	if os.Getenv("GDSLOAD_TEST_HELPER") == "deref" {
		rt, err := cufile.OpenRuntime(cufile.Config{})
		must(t, err)
		d, err := rt.Device(0)
		must(t, err)
		p, err := d.Malloc(4096)
		must(t, err)
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
	if err == nil || !strings.Contains(string(out), "unexpected fault address") {
		t.Fatalf("host read of device memory did not fault: %v\n%s", err, out)
	}
}
