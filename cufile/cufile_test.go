package cufile_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func openDriver(t *testing.T) *cufile.Driver {
	t.Helper()
	c, err := cufile.OpenCuFile(fake.Config())
	require.NoError(t, err)
	d := c.Driver()
	require.NoError(t, d.Open())
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func TestDriverIsReferenceCounted(t *testing.T) {
	reset(t)
	c, err := cufile.OpenCuFile(fake.Config())
	require.NoError(t, err)
	d := c.Driver()
	require.NoError(t, d.Open())
	require.NoError(t, d.Open())
	n := control.Counter("driver_refs")
	assert.EqualValues(t, 1, n, "two Opens opened the library's driver %d times, want once", n)
	require.NoError(t, d.Close())
	n = control.Counter("driver_refs")
	assert.EqualValues(t, 1, n, "driver closed while a reference remains (%d open)", n)
	require.NoError(t, d.Close())
	n = control.Counter("driver_refs")
	assert.Zero(t, n, "driver still open after the last Close (%d)", n)
	assert.Error(t, d.Close(), "Close without Open succeeded")
}

func TestDriverOpenFailure(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"fault=driver_open", "cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{"devices=0", "CU_FILE_CUDA_DRIVER_ERROR (5011): CUDA driver error 100"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			reset(t, tc.cmd)
			c, err := cufile.OpenCuFile(fake.Config())
			require.NoError(t, err)
			err = c.Driver().Open()
			require.ErrorIs(t, err, cufile.ErrUnavailable, "Open: %v, want ErrUnavailable saying %q", err, tc.want)
			require.ErrorContains(t, err, tc.want, "Open: %v, want ErrUnavailable saying %q", err, tc.want)
			var oe *cufile.OpError
			assert.ErrorAs(t, err, &oe, "%T is not an *OpError", err)
			assert.Error(t, c.Driver().Close(), "a failed Open took a reference")
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
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "Mode = %q (%q), want %q with a reason", got, why, tc.want)
			assert.NotEmpty(t, why, "Mode = %q (%q), want %q with a reason", got, why, tc.want)
			p, err := d.Properties()
			require.NoError(t, err)
			assert.Equal(t, tc.want == cufile.ModeNVFS, p.NVFSMajor > 0, "properties %+v", p)
			assert.EqualValues(t, 32<<20, p.MaxPinnedMemKiB, "properties %+v", p)
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
		got := (&cufile.OpError{Op: "op", Code: tc.code}).Error()
		assert.Contains(t, got, tc.want, "code %d prints %q, want %q", tc.code, got, tc.want)
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
	require.NoError(t, os.WriteFile(name, data, 0o644))
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
	require.NoError(t, err)
	defer f.Close()
	_, err = d.RegisterFile(int(f.Fd()))
	var oe *cufile.OpError
	if assert.ErrorAs(t, err, &oe, "registering a buffered fd: %v, want CU_FILE_DIO_NOT_SET telling to use O_DIRECT", err) {
		assert.Equal(t, cufile.CuFileDIONotSet, oe.Code, "registering a buffered fd: %v, want CU_FILE_DIO_NOT_SET telling to use O_DIRECT", err)
	}
	assert.ErrorContains(t, err, "O_DIRECT", "registering a buffered fd: %v, want CU_FILE_DIO_NOT_SET telling to use O_DIRECT", err)
}

func TestCuFileRead(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	const size = 3<<20 + 1000 // an unaligned tail
	data, f := writeFile(t, size)
	h, err := drv.RegisterFile(int(f.Fd()))
	require.NoError(t, err)
	defer h.Close()
	p, err := dev.Malloc(4 << 20)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()
	require.NoError(t, drv.RegisterBuffer(p, 4<<20))
	err = drv.RegisterBuffer(p, 4<<20)
	assert.ErrorContains(t, err, "CU_FILE_MEMORY_ALREADY_REGISTERED", "second RegisterBuffer: %v", err)
	defer func() { require.NoError(t, drv.DeregisterBuffer(p)) }()

	// Aligned chunk, unaligned chunk, and the tail past end of file.
	for _, r := range []struct{ off, n, want int64 }{
		{0, 1 << 20, 1 << 20},
		{1<<20 + 17, 5000, 5000},
		{3 << 20, 1 << 20, 1000},
	} {
		got, err := h.Read(p, r.n, r.off, r.off)
		require.NoError(t, err, "Read(%d bytes at %d) = %d, %v; want %d", r.n, r.off, got, err, r.want)
		require.Equal(t, r.want, got, "Read(%d bytes at %d) = %d, %v; want %d", r.n, r.off, got, err, r.want)
	}
	back := make([]byte, size)
	require.NoError(t, dev.CopyFromDevice(back[:1<<20], p))
	require.NoError(t, dev.CopyFromDevice(back[1<<20+17:1<<20+17+5000], p+1<<20+17))
	require.NoError(t, dev.CopyFromDevice(back[3<<20:], p+3<<20))
	for _, r := range [][2]int{{0, 1 << 20}, {1<<20 + 17, 1<<20 + 17 + 5000}, {3 << 20, size}} {
		assert.True(t, bytes.Equal(back[r[0]:r[1]], data[r[0]:r[1]]), "bytes [%d, %d) differ after cuFileRead", r[0], r[1])
	}
}

func TestCuFileReadErrors(t *testing.T) {
	reset(t)
	dev := openDevice(t, 0)
	drv := openDriver(t)
	_, f := writeFile(t, 1<<20)
	h, err := drv.RegisterFile(int(f.Fd()))
	require.NoError(t, err)
	defer h.Close()
	p, err := dev.Malloc(1 << 20)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()

	require.NoError(t, control.Do("fault=read_at:8192"))
	_, err = h.Read(p, 65536, 0, 0)
	assert.ErrorIs(t, err, syscall.EIO, "read over a bad block: %v, want EIO naming the range", err)
	assert.ErrorContains(t, err, "cuFileRead(65536 bytes at file offset 0)", "read over a bad block: %v, want EIO naming the range", err)
	require.NoError(t, control.Do("fault=cufile_io"))
	var oe *cufile.OpError
	_, err = h.Read(p, 4096, 0, 0)
	if assert.ErrorAs(t, err, &oe, "-CU_FILE_IO_ERROR: %v", err) {
		assert.Equal(t, 5044, oe.Code, "-CU_FILE_IO_ERROR: %v", err)
	}
	require.NoError(t, control.Do("fault=short_read"))
	n, err := h.Read(p, 65536, 0, 0)
	assert.NoError(t, err, "short read: %d, %v; want 32768 and no error", n, err)
	assert.EqualValues(t, 32768, n, "short read: %d, %v; want 32768 and no error", n, err)
	require.NoError(t, control.Do("fault="))
	_, err = h.Read(p, 4096, 0, 1<<20)
	if assert.ErrorAs(t, err, &oe, "read past the device buffer: %v, want CU_FILE_CUDA_POINTER_RANGE_ERROR", err) {
		assert.Equal(t, 5014, oe.Code, "read past the device buffer: %v, want CU_FILE_CUDA_POINTER_RANGE_ERROR", err)
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
	require.NoError(t, err)
	defer h.Close()
	p, err := dev.Malloc(int64(len(want)))
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Free(p)) }()
	require.NoError(t, dev.CopyToDevice(p, want))
	n, err := h.Write(p, int64(len(want)), 0, 0)
	require.NoError(t, err, "Write = %d, %v", n, err)
	require.EqualValues(t, len(want), n, "Write = %d, %v", n, err)
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(got, want), "file differs from the device bytes written")
}

func TestCUDADriverAPI(t *testing.T) {
	reset(t)
	cu, err := cufile.OpenCUDADriver(fake.Config())
	require.NoError(t, err)
	require.NoError(t, cu.Init())
	dev := openDevice(t, 0)
	p, err := dev.Malloc(1 << 16)
	require.NoError(t, err)
	fd, err := cu.DmaBufFd(p, 1<<16)
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	unix.Close(fd)
	require.NoError(t, cu.SetSyncMemops(p))
	assert.Error(t, cu.SetSyncMemops(12345), "SYNC_MEMOPS on a non-device address succeeded")
	require.NoError(t, dev.Free(p))
	require.NoError(t, control.Do("devices=0"))
	err = cu.Init()
	assert.ErrorIs(t, err, cufile.ErrUnavailable, "cuInit without GPU: %v, want ErrUnavailable", err)
}

// cuFile reads into the calling thread's current device: Device.Do makes
// a device current on the goroutine's locked thread.
func TestCuFileReadNeedsCurrentDevice(t *testing.T) {
	reset(t, "devices=2")
	rt := openRuntime(t)
	d0, err := rt.Device(0)
	require.NoError(t, err)
	d1, err := rt.Device(1)
	require.NoError(t, err)
	drv := openDriver(t)
	data, f := writeFile(t, 8192)
	h, err := drv.RegisterFile(int(f.Fd()))
	require.NoError(t, err)
	defer h.Close()
	p, err := d1.Malloc(8192)
	require.NoError(t, err)
	defer func() { require.NoError(t, d1.Free(p)) }()
	var oe *cufile.OpError
	err = d0.Do(func() error { _, err := h.Read(p, 8192, 0, 0); return err })
	require.ErrorAs(t, err, &oe, "read into GPU 1 memory with GPU 0 current: %v, want CU_FILE_CUDA_CONTEXT_MISMATCH", err)
	require.Equal(t, 5015, oe.Code, "read into GPU 1 memory with GPU 0 current: %v, want CU_FILE_CUDA_CONTEXT_MISMATCH", err)
	require.NoError(t, d1.Do(func() error { _, err := h.Read(p, 8192, 0, 0); return err }))
	back := make([]byte, 8192)
	require.NoError(t, d1.CopyFromDevice(back, p))
	assert.True(t, bytes.Equal(back, data), "bytes differ after a read on GPU 1")
}
