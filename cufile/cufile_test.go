package cufile_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"golang.org/x/sys/unix"
)

func openDriver(t *testing.T) *cufile.Driver {
	t.Helper()
	c, err := cufile.OpenCuFile(fake.Config())
	must(t, err)
	d := c.Driver()
	must(t, d.Open())
	t.Cleanup(func() { must(t, d.Close()) })
	return d
}

func TestDriverIsReferenceCounted(t *testing.T) {
	reset(t)
	c, err := cufile.OpenCuFile(fake.Config())
	must(t, err)
	d := c.Driver()
	must(t, d.Open())
	must(t, d.Open())
	if n := control.Counter("driver_refs"); n != 1 {
		t.Errorf("two Opens opened the library's driver %d times, want once", n)
	}
	must(t, d.Close())
	if n := control.Counter("driver_refs"); n != 1 {
		t.Errorf("driver closed while a reference remains (%d open)", n)
	}
	must(t, d.Close())
	if n := control.Counter("driver_refs"); n != 0 {
		t.Errorf("driver still open after the last Close (%d)", n)
	}
	if err := d.Close(); err == nil {
		t.Error("Close without Open succeeded")
	}
}

func TestDriverOpenFailure(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"fault=driver_open", "cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{"devices=0", "CU_FILE_CUDA_DRIVER_ERROR (5011): CUDA driver error 100"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			reset(t, tc.cmd)
			c, err := cufile.OpenCuFile(fake.Config())
			must(t, err)
			err = c.Driver().Open()
			if !errors.Is(err, cufile.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want ErrUnavailable saying %q", err, tc.want)
			}
			var oe *cufile.OpError
			if !errors.As(err, &oe) {
				t.Errorf("%T is not an *OpError", err)
			}
			if err := c.Driver().Close(); err == nil {
				t.Error("a failed Open took a reference")
			}
		})
	}
}

func TestMode(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want cufile.Mode
	}{
		{"nvfs", cufile.ModeNVFS},
		{"p2pdma", cufile.ModeP2PDMA},
		{"compat", cufile.ModeCompat},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			reset(t, "mode="+tc.mode)
			d := openDriver(t)
			got, why, err := d.Mode()
			must(t, err)
			if got != tc.want || why == "" {
				t.Errorf("Mode = %q (%q), want %q with a reason", got, why, tc.want)
			}
			p, err := d.Properties()
			must(t, err)
			if (p.NVFSMajor > 0) != (tc.want == cufile.ModeNVFS) || p.MaxPinnedMemKiB != 32<<20 {
				t.Errorf("properties %+v", p)
			}
		})
	}
}

func TestOpErrorText(t *testing.T) {
	for _, tc := range []struct {
		code int
		want string
	}{
		{5001, "CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{5044, "CU_FILE_IO_ERROR (5044)"},
		{5099, "CUfileOpError (5099)"}, // newer than this package: printed, not rejected
	} {
		if got := (&cufile.OpError{Op: "op", Code: tc.code}).Error(); !strings.Contains(got, tc.want) {
			t.Errorf("code %d prints %q, want %q", tc.code, got, tc.want)
		}
	}
}

// writeFile writes n random bytes into a file on a file system that takes
// O_DIRECT and opens it with O_DIRECT.
func writeFile(t *testing.T, n int) ([]byte, *os.File) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	name := filepath.Join(t.TempDir(), "data")
	must(t, os.WriteFile(name, data, 0o644))
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Skipf("O_DIRECT refused here: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return data, f
}

func TestRegisterFileNeedsODirect(t *testing.T) {
	reset(t)
	d := openDriver(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "buffered"))
	must(t, err)
	defer f.Close()
	_, err = d.RegisterFile(int(f.Fd()))
	var oe *cufile.OpError
	if !errors.As(err, &oe) || oe.Code != cufile.CuFileDIONotSet || !strings.Contains(err.Error(), "O_DIRECT") {
		t.Errorf("registering a buffered fd: %v, want CU_FILE_DIO_NOT_SET telling to use O_DIRECT", err)
	}
}

func TestCuFileRead(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	const size = 3<<20 + 1000 // an unaligned tail
	data, f := writeFile(t, size)
	h, err := drv.RegisterFile(int(f.Fd()))
	must(t, err)
	defer h.Close()
	p, err := dev.Malloc(4 << 20)
	must(t, err)
	defer func() { must(t, dev.Free(p)) }()
	must(t, drv.RegisterBuffer(p, 4<<20))
	if err := drv.RegisterBuffer(p, 4<<20); err == nil || !strings.Contains(err.Error(), "CU_FILE_MEMORY_ALREADY_REGISTERED") {
		t.Errorf("second RegisterBuffer: %v", err)
	}
	defer func() { must(t, drv.DeregisterBuffer(p)) }()

	// Aligned chunk, unaligned chunk, and the tail past end of file.
	for _, r := range []struct{ off, n, want int64 }{
		{0, 1 << 20, 1 << 20},
		{1<<20 + 17, 5000, 5000},
		{3 << 20, 1 << 20, 1000},
	} {
		got, err := h.Read(p, r.n, r.off, r.off)
		if err != nil || got != r.want {
			t.Fatalf("Read(%d bytes at %d) = %d, %v; want %d", r.n, r.off, got, err, r.want)
		}
	}
	back := make([]byte, size)
	must(t, dev.CopyFromDevice(back[:1<<20], p))
	must(t, dev.CopyFromDevice(back[1<<20+17:1<<20+17+5000], p+1<<20+17))
	must(t, dev.CopyFromDevice(back[3<<20:], p+3<<20))
	for _, r := range [][2]int{{0, 1 << 20}, {1<<20 + 17, 1<<20 + 17 + 5000}, {3 << 20, size}} {
		if !bytes.Equal(back[r[0]:r[1]], data[r[0]:r[1]]) {
			t.Errorf("bytes [%d, %d) differ after cuFileRead", r[0], r[1])
		}
	}
}

func TestCuFileReadErrors(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	_, f := writeFile(t, 1<<20)
	h, err := drv.RegisterFile(int(f.Fd()))
	must(t, err)
	defer h.Close()
	p, err := dev.Malloc(1 << 20)
	must(t, err)
	defer func() { must(t, dev.Free(p)) }()

	must(t, control.Do("fault=read_at:8192"))
	if _, err := h.Read(p, 65536, 0, 0); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "cuFileRead(65536 bytes at file offset 0)") {
		t.Errorf("read over a bad block: %v, want EIO naming the range", err)
	}
	must(t, control.Do("fault=cufile_io"))
	var oe *cufile.OpError
	if _, err := h.Read(p, 4096, 0, 0); !errors.As(err, &oe) || oe.Code != 5044 {
		t.Errorf("-CU_FILE_IO_ERROR: %v", err)
	}
	must(t, control.Do("fault=short_read"))
	if n, err := h.Read(p, 65536, 0, 0); err != nil || n != 32768 {
		t.Errorf("short read: %d, %v; want 32768 and no error", n, err)
	}
	must(t, control.Do("fault="))
	if _, err := h.Read(p, 4096, 0, 1<<20); !errors.As(err, &oe) || oe.Code != 5014 {
		t.Errorf("read past the device buffer: %v, want CU_FILE_CUDA_POINTER_RANGE_ERROR", err)
	}
}

func TestCuFileWrite(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	want := bytes.Repeat([]byte("gdsload!"), 8192)
	name := filepath.Join(t.TempDir(), "out")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|syscall.O_DIRECT, 0o644)
	if err != nil {
		t.Skipf("O_DIRECT refused here: %v", err)
	}
	defer f.Close()
	h, err := drv.RegisterFile(int(f.Fd()))
	must(t, err)
	defer h.Close()
	p, err := dev.Malloc(int64(len(want)))
	must(t, err)
	defer func() { must(t, dev.Free(p)) }()
	must(t, dev.CopyToDevice(p, want))
	n, err := h.Write(p, int64(len(want)), 0, 0)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	got, err := os.ReadFile(name)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Error("file differs from the device bytes written")
	}
}

func TestCUDADriverAPI(t *testing.T) {
	reset(t)
	cu, err := cufile.OpenCUDADriver(fake.Config())
	must(t, err)
	must(t, cu.Init())
	dev := openDevice(t, 0)
	p, err := dev.Malloc(1 << 16)
	must(t, err)
	fd, err := cu.DmaBufFd(p, 1<<16)
	must(t, err)
	var st unix.Stat_t
	must(t, unix.Fstat(fd, &st))
	unix.Close(fd)
	must(t, cu.SetSyncMemops(p))
	if err := cu.SetSyncMemops(12345); err == nil {
		t.Error("SYNC_MEMOPS on a non-device address succeeded")
	}
	must(t, dev.Free(p))
	must(t, control.Do("devices=0"))
	if err := cu.Init(); !errors.Is(err, cufile.ErrUnavailable) {
		t.Errorf("cuInit without GPU: %v, want ErrUnavailable", err)
	}
}

// cuFile reads into the calling thread's current device: Device.Do makes
// a device current on the goroutine's locked thread.
func TestCuFileReadNeedsCurrentDevice(t *testing.T) {
	reset(t, "devices=2")
	rt := openRuntime(t)
	d0, err := rt.Device(0)
	must(t, err)
	d1, err := rt.Device(1)
	must(t, err)
	drv := openDriver(t)
	data, f := writeFile(t, 8192)
	h, err := drv.RegisterFile(int(f.Fd()))
	must(t, err)
	defer h.Close()
	p, err := d1.Malloc(8192)
	must(t, err)
	defer func() { must(t, d1.Free(p)) }()
	var oe *cufile.OpError
	err = d0.Do(func() error { _, err := h.Read(p, 8192, 0, 0); return err })
	if !errors.As(err, &oe) || oe.Code != 5015 {
		t.Fatalf("read into GPU 1 memory with GPU 0 current: %v, want CU_FILE_CUDA_CONTEXT_MISMATCH", err)
	}
	must(t, d1.Do(func() error { _, err := h.Read(p, 8192, 0, 0); return err }))
	back := make([]byte, 8192)
	must(t, d1.CopyFromDevice(back, p))
	if !bytes.Equal(back, data) {
		t.Error("bytes differ after a read on GPU 1")
	}
}
