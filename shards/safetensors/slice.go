package safetensors

import (
	"fmt"
	"math"
)

// DefaultMaxGap is the MaxGap a SlicePlan reads through when the caller
// gives none: one 4 KiB page. A direct (O_DIRECT) read is made of whole
// 4 KiB blocks anyway, so reading a gap of up to a page costs no more
// storage requests than skipping it would.
const DefaultMaxGap = 4096

// DimSlice selects Count indices of one dimension: Start, Start+Step, ...,
// Start+(Count-1)*Step. Step is at least 1; Count may be 0 (an empty
// selection).
type DimSlice struct {
	Start, Step, Count int64
}

// ByteRange is one read of a SlicePlan: Length bytes from Offset (relative
// to the tensor's first byte) land at Dest in the plan's staging buffer.
type ByteRange struct {
	Offset, Length, Dest int64
}

// SlicePlan is how to read a selection of a row-major tensor: the byte
// ranges to read into a staging buffer of Size bytes, and where the
// selected elements then sit in that buffer.
//
// Element (i0, ..., in-1) of the selection, i in [0, Shape), is at byte
// Base + sum(i_d*Strides[d]) of the staging buffer. When Compact is set the
// staging buffer is exactly the selection in row-major order (Size ==
// Asked): a whole tensor, a slice of dimension 0 with step 1, or any
// selection whose elements are consecutive in the file. Otherwise the
// buffer also holds the unasked bytes that were cheaper to read than to
// skip, and a caller copies the selection out of it.
type SlicePlan struct {
	Ranges  []ByteRange // sorted by Offset, disjoint; Dest packed from 0 in the same order
	Size    int64       // staging bytes: the sum of the ranges' lengths
	Asked   int64       // bytes of the selected elements
	Shape   []int64     // the selection's shape: Count per dimension
	Strides []int64     // byte strides of the selection in the staging buffer
	Base    int64       // staging offset of the selection's first element
	Compact bool        // the staging buffer holds the selection row-major and nothing else
}

// PlanSlice plans the reads of the elements sel selects from a row-major
// tensor of shape whose elements are elemSize bytes (a whole number: packed
// sub-byte dtypes cannot be sliced). sel has one DimSlice per dimension; nil
// selects the whole tensor. maxGap (0: DefaultMaxGap) bounds the waste.
//
// Waste bound: the ranges cover every selected byte, start and end on
// selected bytes, and never read more than maxGap unselected bytes in a
// row. So the bytes read beyond those asked are at most maxGap times the
// number of gaps inside the ranges, which is below the number of selected
// elements. A selection of consecutive rows (dimension 0 with step 1, or
// any selection that is contiguous in the file) is one range with no waste.
//
// How: the planner splits the dimensions at the first one k such that every
// dimension from k on skips at most maxGap bytes between its selected
// indices (stepping dimension d skips Step*stride(d) minus the span of the
// dimensions after it). Each combination of the selected indices of the
// dimensions before k is then one range, spanning the selected part of the
// dimensions from k on; ranges that touch in the file are merged.
func PlanSlice(shape []int64, elemSize int64, sel []DimSlice, maxGap int64) (SlicePlan, error) {
	if elemSize <= 0 {
		return SlicePlan{}, fmt.Errorf("slice: element size %d bytes: want whole bytes (packed sub-byte dtypes cannot be sliced)", elemSize)
	}
	if maxGap < 0 {
		return SlicePlan{}, fmt.Errorf("slice: max gap %d bytes must not be negative", maxGap)
	}
	if maxGap == 0 {
		maxGap = DefaultMaxGap
	}
	n := len(shape)
	if sel == nil {
		sel = make([]DimSlice, n)
		for d, s := range shape {
			sel[d] = DimSlice{Start: 0, Step: 1, Count: s}
		}
	}
	if len(sel) != n {
		return SlicePlan{}, fmt.Errorf("slice: %d dimensions selected of a tensor of shape %v", len(sel), shape)
	}
	// Row-major byte strides, checking the tensor's size fits an int64.
	strides := make([]int64, n)
	total := elemSize
	for d := n - 1; d >= 0; d-- {
		if shape[d] < 0 {
			return SlicePlan{}, fmt.Errorf("slice: shape %v has a negative dimension", shape)
		}
		strides[d] = total
		if shape[d] > 0 && total > math.MaxInt64/shape[d] {
			return SlicePlan{}, fmt.Errorf("slice: shape %v of %d-byte elements overflows", shape, elemSize)
		}
		total *= shape[d]
	}
	p := SlicePlan{Shape: make([]int64, n), Strides: make([]int64, n)}
	asked := elemSize
	for d, s := range sel {
		if s.Count < 0 || s.Step < 1 || s.Start < 0 || (s.Count > 0 && (s.Start >= shape[d] || (s.Count-1) > (shape[d]-1-s.Start)/s.Step)) {
			return SlicePlan{}, fmt.Errorf("slice: dimension %d of shape %v: start %d, step %d, count %d select outside it", d, shape, s.Start, s.Step, s.Count)
		}
		p.Shape[d] = s.Count
		asked *= s.Count
	}
	if asked == 0 {
		p.Compact = true
		copy(p.Strides, strides)
		return p, nil
	}
	p.Asked = asked
	// span[d]: bytes from the first selected byte of dimensions d.. to the
	// end of their last selected element; first[d]: offset of that byte
	// within one index of dimension d-1.
	span := make([]int64, n+1)
	first := make([]int64, n+1)
	span[n] = elemSize
	for d := n - 1; d >= 0; d-- {
		s := sel[d]
		span[d] = (s.Count-1)*s.Step*strides[d] + span[d+1]
		first[d] = s.Start*strides[d] + first[d+1]
	}
	k := n
	for d := n - 1; d >= 0; d-- {
		if sel[d].Count > 1 && sel[d].Step*strides[d]-span[d+1] > maxGap {
			break
		}
		k = d
	}
	runLen := span[k]
	runs := int64(1)
	for d := range k {
		runs *= sel[d].Count
	}
	// Strides in the staging buffer: runs are packed runLen apart, and
	// within a run the elements keep their file strides.
	inner := runLen
	for d := k - 1; d >= 0; d-- {
		p.Strides[d] = inner
		inner *= sel[d].Count
	}
	for d := k; d < n; d++ {
		p.Strides[d] = sel[d].Step * strides[d]
	}
	// Enumerate the runs in row-major order of the outer indices.
	idx := make([]int64, k)
	p.Ranges = make([]ByteRange, 0, min(runs, 1<<16))
	for r := int64(0); r < runs; r++ {
		off := first[k]
		for d := range k {
			off += (sel[d].Start + idx[d]*sel[d].Step) * strides[d]
		}
		if m := len(p.Ranges) - 1; m >= 0 && p.Ranges[m].Offset+p.Ranges[m].Length == off {
			p.Ranges[m].Length += runLen
		} else {
			p.Ranges = append(p.Ranges, ByteRange{Offset: off, Length: runLen, Dest: p.Size})
		}
		p.Size += runLen
		for d := k - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < sel[d].Count {
				break
			}
			idx[d] = 0
		}
	}
	p.Compact = p.Size == p.Asked
	return p, nil
}
