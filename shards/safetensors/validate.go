package safetensors

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// validate checks each tensor's dtype and size, then that the tensors, sorted
// by offset, tile [0, dataLen) exactly, as the reference implementation does.
func validate(raw []rawTensor, dataLen int64) ([]TensorInfo, error) {
	for _, t := range raw {
		size, err := tensorBytes(t.dtype, t.shape)
		if err != nil {
			err.Tensor, err.Offset = t.name, t.at
			return nil, err
		}
		if t.end < t.begin {
			return nil, &Error{Tensor: t.name, Offset: t.at, Kind: ErrInvalidOffsets,
				Detail: fmt.Sprintf("end %d is before begin %d", t.end, t.begin)}
		}
		if t.end-t.begin != size {
			return nil, &Error{Tensor: t.name, Offset: t.at, Kind: ErrSizeMismatch,
				Detail: fmt.Sprintf("data_offsets [%d, %d] span %d bytes, %s%v needs %d", t.begin, t.end, t.end-t.begin, t.dtype, t.shape, size)}
		}
	}
	slices.SortFunc(raw, func(a, b rawTensor) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end), cmp.Compare(a.name, b.name))
	})
	out := make([]TensorInfo, len(raw))
	var next int64
	for i, t := range raw {
		switch {
		case t.begin > next:
			return nil, &Error{Tensor: t.name, Offset: t.at, Kind: ErrOffsetsGap,
				Detail: fmt.Sprintf("begins at %d, previous data ends at %d", t.begin, next)}
		case t.begin < next:
			return nil, &Error{Tensor: t.name, Offset: t.at, Kind: ErrOffsetsOverlap,
				Detail: fmt.Sprintf("begins at %d, previous data ends at %d", t.begin, next)}
		}
		next = t.end
		out[i] = TensorInfo{Name: t.name, Dtype: t.dtype, Shape: t.shape, Begin: t.begin, End: t.end}
	}
	if next != dataLen {
		return nil, &Error{Offset: -1, Kind: ErrDataRegionLength,
			Detail: fmt.Sprintf("tensors end at data offset %d, the data region is %d bytes", next, dataLen)}
	}
	return out, nil
}

// tensorBytes returns the byte size of a dtype tensor of the given shape,
// failing on unknown dtypes, negative dimensions, overflow and sub-byte
// tensors that do not fill whole bytes. The returned *Error has no tensor
// name or offset yet.
func tensorBytes(dtype string, shape []int64) (int64, *Error) {
	bits, ok := DtypeBits(dtype)
	if !ok {
		return 0, &Error{Kind: ErrUnknownDtype, Detail: fmt.Sprintf("%q is not a safetensors dtype", dtype)}
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, &Error{Kind: ErrInvalidShape, Detail: fmt.Sprintf("shape %v has a negative dimension", shape)}
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, &Error{Kind: ErrShapeOverflow, Detail: fmt.Sprintf("element count of shape %v overflows int64", shape)}
		}
		n *= d
	}
	if n > math.MaxInt64/bits {
		return 0, &Error{Kind: ErrShapeOverflow, Detail: fmt.Sprintf("%d elements of %d bits overflow int64", n, bits)}
	}
	if n*bits%8 != 0 {
		return 0, &Error{Kind: ErrSubByte, Detail: fmt.Sprintf("%d elements of %s are %d bits, not a whole number of bytes", n, dtype, n*bits)}
	}
	return n * bits / 8, nil
}
