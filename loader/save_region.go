package loader

import (
	"context"
	"fmt"

	"github.com/gdsload/gdsload/cufile"
)

// DeviceRegion returns bytes [off, off+n) of a destination the host cannot
// read (a GPU destination) as a SaveSource: SaveFile copies it back through
// host buffers, or, when the destination writes files itself (the gds
// destination), with cuFileWrite. A tensor view of a checkpoint in GPU
// memory is saved this way.
func DeviceRegion(dst ReadBacker, off, n int64) SaveSource {
	r := region{dst: dst, off: off, n: n}
	if fw, ok := dst.(FileWriterSource); ok {
		return writerRegion{region: r, fw: fw}
	}
	return r
}

type region struct {
	dst    ReadBacker
	off, n int64
}

func (r region) Size() int64 { return r.n }

// PinHost forwards to the destination when it can pin host memory.
func (r region) PinHost(mem []byte) (func(), error) {
	if hp, ok := r.dst.(HostPinner); ok {
		return hp.PinHost(mem)
	}
	return func() {}, nil
}

func (r region) ReadBack(ctx context.Context, off int64, p []byte) error {
	if off < 0 || off+int64(len(p)) > r.n {
		return fmt.Errorf("bytes [%d, %d) outside a region of %d", off, off+int64(len(p)), r.n)
	}
	return r.dst.ReadBack(ctx, r.off+off, p)
}

// writerRegion is a region of a destination that writes files itself.
type writerRegion struct {
	region
	fw FileWriterSource
}

func (w writerRegion) WriteToFile(ctx context.Context, fd uintptr, fileOff, srcOff, n int64) (int64, error) {
	if srcOff < 0 || srcOff+n > w.n {
		return 0, fmt.Errorf("bytes [%d, %d) outside a region of %d", srcOff, srcOff+n, w.n)
	}
	return w.fw.WriteToFile(ctx, fd, fileOff, w.off+srcOff, n)
}

// ReleaseFile forwards to the destination when it keeps per-file state.
func (w writerRegion) ReleaseFile(fd uintptr) {
	if r, ok := w.fw.(FileReleaser); ok {
		r.ReleaseFile(fd)
	}
}

// CuFileMode forwards to the destination when it knows cuFile's mode.
func (w writerRegion) CuFileMode() cufile.Mode {
	if m, ok := w.fw.(cuFileModer); ok {
		return m.CuFileMode()
	}
	return ""
}
