package loader

import (
	"context"
	"fmt"

	"github.com/gdsload/gdsload/cufile"
)

// gpuMemory is one device allocation that a GPU destination lands bytes
// in. Destination offset 0 is at base+shift: the shift lets device
// addresses share the alignment of the file offsets that land on them.
type gpuMemory struct {
	dev   *cufile.Device
	base  cufile.DevicePtr // what cudaMalloc returned
	shift int64
	size  int64
}

// allocGPU allocates size bytes (plus shift) on dev after checking they fit
// in its free memory, so the error names both figures.
func allocGPU(dev *cufile.Device, size, shift int64) (*gpuMemory, error) {
	if size <= 0 {
		return nil, fmt.Errorf("GPU %d destination of %d bytes: size must be positive", dev.ID(), size)
	}
	free, total, err := dev.MemInfo()
	if err != nil {
		return nil, err
	}
	need := size + shift
	if need > free {
		return nil, fmt.Errorf("GPU %d destination needs %d bytes (%s) but only %d bytes (%s) of %s are free: %w; load fewer files at once or use another GPU",
			dev.ID(), need, gpuGiB(need), free, gpuGiB(free), gpuGiB(total), cufile.ErrOutOfMemory)
	}
	p, err := dev.Malloc(need)
	if err != nil {
		return nil, err
	}
	return &gpuMemory{dev: dev, base: p, shift: shift, size: size}, nil
}

func gpuGiB(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// ptr is the device address of destination offset 0.
func (m *gpuMemory) ptr() cufile.DevicePtr { return m.base + cufile.DevicePtr(m.shift) }

func (m *gpuMemory) kind() string { return fmt.Sprintf("gpu:%d", m.dev.ID()) }

// check refuses ranges outside the destination.
func (m *gpuMemory) check(off, n int64) error {
	if off < 0 || n < 0 || off > m.size || n > m.size-off {
		return fmt.Errorf("%s destination: bytes [%d, %d) outside its %d bytes", m.kind(), off, off+n, m.size)
	}
	return nil
}

// readBack copies device bytes [off, off+len(p)) into p. The caller must
// have flushed pending asynchronous copies first.
func (m *gpuMemory) readBack(ctx context.Context, off int64, p []byte) error {
	if err := m.check(off, int64(len(p))); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.dev.CopyFromDevice(p, m.ptr()+cufile.DevicePtr(off))
}

func (m *gpuMemory) free() error { return m.dev.Free(m.base) }

// pinHost page-locks mem for copies from this device's memory.
func (m *gpuMemory) pinHost(mem []byte) (func(), error) {
	reg, err := m.dev.RegisterHost(mem)
	if err != nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}

// gpuView gives the GPU destinations their common accessors over their
// device memory.
type gpuView struct{ mem *gpuMemory }

// Kind names the memory: "gpu:N".
func (v gpuView) Kind() string { return v.mem.kind() }

// Len is the destination's size in bytes.
func (v gpuView) Len() int64 { return v.mem.size }

// Size is the destination's size: as a SaveSource (loader.SaveFile) the
// whole device allocation is saved.
func (v gpuView) Size() int64 { return v.mem.size }

// PinHost page-locks host memory that ReadBack copies into (HostPinner:
// SaveFile's bounce buffers).
func (v gpuView) PinHost(mem []byte) (func(), error) { return v.mem.pinHost(mem) }

// DeviceAddress is the device address of destination offset off: the rdma
// path writes there.
func (v gpuView) DeviceAddress(off int64) uintptr { return uintptr(v.mem.ptr()) + uintptr(off) }

// DevicePtr is the device address of destination offset 0, for tensor
// views and kernels.
func (v gpuView) DevicePtr() cufile.DevicePtr { return v.mem.ptr() }
