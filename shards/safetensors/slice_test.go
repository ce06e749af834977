package safetensors

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkSlicePlan cross-checks p against a naive walk over every selected
// element: each element's bytes land where Base and Strides say, the
// ranges are sorted, disjoint and packed, they start and end on selected
// bytes, and no run of unselected bytes they read is longer than maxGap.
func checkSlicePlan(t *testing.T, shape []int64, elem int64, sel []DimSlice, maxGap int64, p SlicePlan) {
	t.Helper()
	n := len(shape)
	strides := make([]int64, n)
	total := elem
	for d := n - 1; d >= 0; d-- {
		strides[d] = total
		total *= shape[d]
	}
	count := int64(1)
	for d := range n {
		require.Equal(t, sel[d].Count, p.Shape[d], "shape of the selection")
		count *= sel[d].Count
	}
	require.Equal(t, count*elem, p.Asked, "asked bytes")
	var dest int64
	for i, r := range p.Ranges {
		require.Positive(t, r.Length, "range %d", i)
		require.Equal(t, dest, r.Dest, "range %d packed", i)
		dest += r.Length
		if i > 0 {
			prev := p.Ranges[i-1]
			require.Greater(t, r.Offset, prev.Offset+prev.Length, "range %d sorted, disjoint and not touching", i)
		}
		require.LessOrEqual(t, r.Offset+r.Length, total, "range %d inside the tensor", i)
	}
	require.Equal(t, dest, p.Size, "size")
	if count == 0 {
		require.Empty(t, p.Ranges)
		return
	}
	asked := make([]bool, total) // by file byte
	idx := make([]int64, n)
	for range count {
		off, at := int64(0), p.Base
		for d := range n {
			off += (sel[d].Start + idx[d]*sel[d].Step) * strides[d]
			at += idx[d] * p.Strides[d]
		}
		j := sort.Search(len(p.Ranges), func(j int) bool { return p.Ranges[j].Offset+p.Ranges[j].Length > off })
		require.Less(t, j, len(p.Ranges), "element at %d read", off)
		r := p.Ranges[j]
		require.GreaterOrEqual(t, off, r.Offset, "element at %d read", off)
		require.LessOrEqual(t, off+elem, r.Offset+r.Length, "element at %d read whole", off)
		require.Equal(t, r.Dest+off-r.Offset, at, "element %v lands where the strides say", idx)
		for b := off; b < off+elem; b++ {
			asked[b] = true
		}
		for d := n - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < sel[d].Count {
				break
			}
			idx[d] = 0
		}
	}
	var read int64
	for _, r := range p.Ranges {
		require.True(t, asked[r.Offset], "range at %d starts on a selected byte", r.Offset)
		require.True(t, asked[r.Offset+r.Length-1], "range at %d ends on a selected byte", r.Offset)
		gap := int64(0)
		for b := r.Offset; b < r.Offset+r.Length; b++ {
			if asked[b] {
				gap = 0
				continue
			}
			gap++
			require.LessOrEqual(t, gap, maxGap, "range at %d reads more than %d unselected bytes in a row", r.Offset, maxGap)
		}
		read += r.Length
	}
	require.GreaterOrEqual(t, read, p.Asked)
	require.Equal(t, p.Compact, read == p.Asked, "compact exactly when nothing is wasted")
}

func TestPlanSlice(t *testing.T) {
	all := func(shape ...int64) []DimSlice {
		s := make([]DimSlice, len(shape))
		for d, n := range shape {
			s[d] = DimSlice{Step: 1, Count: n}
		}
		return s
	}
	rows := all(8, 6, 4)
	rows[0] = DimSlice{Start: 2, Step: 1, Count: 3}
	cols := all(16, 1024)
	cols[1] = DimSlice{Start: 256, Step: 1, Count: 256}
	stepped := all(16, 1024)
	stepped[1] = DimSlice{Start: 1, Step: 2, Count: 511}
	last := all(4, 5, 3000)
	last[2] = DimSlice{Start: 2999, Step: 1, Count: 1}
	cases := []struct {
		name       string
		shape      []int64
		sel        []DimSlice
		maxGap     int64
		ranges     int
		size       int64
		compact    bool
		strides    []int64
		base       int64
		elemSize   int64
		wantErr    bool
		wantAsked  int64
		wantLength int64
	}{
		{name: "whole tensor", shape: []int64{3, 4}, ranges: 1, size: 48, compact: true},
		{name: "scalar", shape: []int64{}, ranges: 1, size: 4, compact: true},
		{name: "rows are one range", shape: []int64{8, 6, 4}, sel: rows, ranges: 1, size: 3 * 6 * 4 * 4, compact: true},
		{name: "a quarter of the columns, gaps over the bound: one range per row", shape: []int64{16, 1024}, sel: cols, maxGap: 1024, ranges: 16, size: 16 * 1024, compact: true, strides: []int64{1024, 4}},
		{name: "same, with the default bound that reads the 3 KiB gaps", shape: []int64{16, 1024}, sel: cols, ranges: 1, size: (15*1024 + 256) * 4, strides: []int64{4096, 4}},
		{name: "every other column: one range, waste below the asked", shape: []int64{16, 1024}, sel: stepped, ranges: 1, size: (15*1024 + 1021) * 4, strides: []int64{4096, 8}},
		{name: "last element of the last dimension", shape: []int64{4, 5, 3000}, sel: last, elemSize: 2, ranges: 20, size: 40, compact: true},
		{name: "empty", shape: []int64{4, 0}, ranges: 0, size: 0, compact: true},
		{name: "outside", shape: []int64{4}, sel: []DimSlice{{Start: 2, Step: 2, Count: 2}}, wantErr: true},
		{name: "zero step", shape: []int64{4}, sel: []DimSlice{{Start: 0, Step: 0, Count: 2}}, wantErr: true},
		{name: "sub-byte", shape: []int64{4}, elemSize: -1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			elem := c.elemSize
			if elem == 0 {
				elem = 4
			}
			if elem < 0 {
				elem = 0
			}
			p, err := PlanSlice(c.shape, elem, c.sel, c.maxGap)
			if c.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, p.Ranges, c.ranges)
			assert.Equal(t, c.size, p.Size)
			assert.Equal(t, c.compact, p.Compact)
			if c.strides != nil {
				assert.Equal(t, c.strides, p.Strides)
			}
			sel := c.sel
			if sel == nil {
				sel = all(c.shape...)
			}
			gap := c.maxGap
			if gap == 0 {
				gap = DefaultMaxGap
			}
			checkSlicePlan(t, c.shape, elem, sel, gap, p)
		})
	}
}

// FuzzPlanSlice cross-checks PlanSlice against the naive element-by-element
// walk of checkSlicePlan on small tensors of up to four dimensions.
func FuzzPlanSlice(f *testing.F) {
	f.Add([]byte{4, 5, 6, 1, 2, 1, 3, 0, 1, 6}, uint8(4), uint16(0))
	f.Add([]byte{9, 9, 0, 2, 4, 1, 3, 2}, uint8(2), uint16(7))
	f.Add([]byte{1, 7, 8, 0, 1, 1, 3, 3, 2, 0, 1, 2}, uint8(1), uint16(3))
	f.Fuzz(func(t *testing.T, spec []byte, elem uint8, gap uint16) {
		// spec: per dimension (at most 4) a byte each for size, start,
		// step and count, wrapped into range.
		n := min(len(spec)/4, 4)
		shape := make([]int64, n)
		sel := make([]DimSlice, n)
		for d := range n {
			b := spec[4*d : 4*d+4]
			size := int64(b[0] % 12)
			shape[d] = size
			if size == 0 {
				sel[d] = DimSlice{Step: 1}
				continue
			}
			start := int64(b[1]) % size
			step := int64(b[2]%5) + 1
			avail := (size-1-start)/step + 1
			sel[d] = DimSlice{Start: start, Step: step, Count: int64(b[3]) % (avail + 1)}
		}
		e := int64(elem%8) + 1
		p, err := PlanSlice(shape, e, sel, int64(gap%300))
		require.NoError(t, err)
		g := int64(gap % 300)
		if g == 0 {
			g = DefaultMaxGap
		}
		checkSlicePlan(t, shape, e, sel, g, p)
	})
}
