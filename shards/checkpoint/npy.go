package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
)

// openNPY opens a .npy file and describes it as a header of one tensor
// named after the file.
func openNPY(ctx context.Context, path string, opts Options) (*shard, error) {
	return openShard(ctx, path, opts, func(f vfs.File) (*safetensors.Header, error) {
		h, err := npy.ParseHeader(f, f.Size())
		if err != nil {
			var e *npy.Error
			if errors.As(err, &e) && e.Path == "" {
				e.Path = path
			}
			return nil, err
		}
		dtype, err := npyDtype(path, h)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(vfs.Base(path), format(path))
		return &safetensors.Header{
			Tensors:    []safetensors.TensorInfo{{Name: name, Dtype: dtype, Shape: h.Shape, Begin: 0, End: h.DataLen}},
			DataOffset: h.DataOffset,
			DataLen:    h.DataLen,
		}, nil
	})
}

// tensorDtype maps a numpy kind and item size to a safetensors dtype name.
func tensorDtype(kind byte, size int64) (string, bool) {
	switch fmt.Sprintf("%c%d", kind, size) {
	case "b1":
		return "BOOL", true
	case "i1":
		return "I8", true
	case "i2":
		return "I16", true
	case "i4":
		return "I32", true
	case "i8":
		return "I64", true
	case "u1":
		return "U8", true
	case "u2":
		return "U16", true
	case "u4":
		return "U32", true
	case "u8":
		return "U64", true
	case "f2":
		return "F16", true
	case "f4":
		return "F32", true
	case "f8":
		return "F64", true
	case "c8":
		return "C64", true
	}
	return "", false
}

// viewableDescrs lists the dtypes tensorDtype maps, for error messages.
const viewableDescrs = "bool, int8-64, uint8-64, float16, float32, float64, complex64"

// npyDtype names h's dtype the way tensor views do, refusing arrays whose
// bytes do not read as a little-endian, row-major tensor of that dtype.
func npyDtype(path string, h *npy.Header) (string, error) {
	dtype, ok := tensorDtype(h.Dtype.Kind, h.Dtype.ItemSize)
	if !ok {
		return "", fmt.Errorf("checkpoint %s: dtype %q: %w: it has no tensor dtype; save it as one of %s",
			path, h.Descr, ErrNotViewable, viewableDescrs)
	}
	if h.Dtype.ByteOrder == '>' && h.Dtype.ItemSize > 1 {
		return "", fmt.Errorf("checkpoint %s: dtype %q: %w: it is big-endian; save it little-endian, e.g. np.save(path, a.astype(a.dtype.newbyteorder('<')))",
			path, h.Descr, ErrNotViewable)
	}
	if h.FortranOrder && longDims(h.Shape) > 1 {
		return "", fmt.Errorf("checkpoint %s: shape %v: %w: it is in Fortran (column-major) order; save it row-major, e.g. np.save(path, np.ascontiguousarray(a))",
			path, h.Shape, ErrNotViewable)
	}
	return dtype, nil
}

// longDims counts the dimensions longer than 1: with at most one, Fortran
// and C order lay the bytes out the same.
func longDims(shape []int64) int {
	n := 0
	for _, d := range shape {
		if d > 1 {
			n++
		}
	}
	return n
}
