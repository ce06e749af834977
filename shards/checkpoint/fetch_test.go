package checkpoint

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gather returns the bytes of the elements sel selects from t, row-major,
// one element at a time: the reference a fetched slice must equal.
func gather(t safetensors.TensorData, sel []safetensors.DimSlice) []byte {
	bits, _ := safetensors.DtypeBits(t.Dtype)
	elem := bits / 8
	n := len(t.Shape)
	strides := make([]int64, n)
	s := elem
	for d := n - 1; d >= 0; d-- {
		strides[d] = s
		s *= t.Shape[d]
	}
	count := int64(1)
	for _, d := range sel {
		count *= d.Count
	}
	out := []byte{}
	idx := make([]int64, n)
	for range count {
		off := int64(0)
		for d := range n {
			off += (sel[d].Start + idx[d]*sel[d].Step) * strides[d]
		}
		out = append(out, t.Data[off:off+elem]...)
		for d := n - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < sel[d].Count {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// selected copies a piece's selection out of its host allocation.
func selected(p Piece) []byte {
	b := p.Dest.(interface{ Bytes() []byte }).Bytes()
	elem := int64(1)
	if bits, _ := safetensors.DtypeBits(p.Dtype); bits >= 8 {
		elem = bits / 8
	}
	if p.Plan.Compact {
		return append([]byte{}, b[:p.Plan.Asked]...)
	}
	out := []byte{}
	n := len(p.Plan.Shape)
	idx := make([]int64, n)
	for range p.Plan.Asked / elem {
		at := p.Plan.Base
		for d := range n {
			at += idx[d] * p.Plan.Strides[d]
		}
		out = append(out, b[at:at+elem]...)
		for d := n - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < p.Plan.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

func TestFetchReadsTheSelection(t *testing.T) {
	s := writeSharded(t)
	want := s.want()
	ck, err := Open(context.Background(), s.index, Options{})
	require.NoError(t, err)
	defer ck.Close()
	all := func(name string) []safetensors.DimSlice {
		var sel []safetensors.DimSlice
		for _, n := range want[name].Shape {
			sel = append(sel, safetensors.DimSlice{Step: 1, Count: n})
		}
		return sel
	}
	rows := all("embed.weight")
	rows[0] = safetensors.DimSlice{Start: 100, Step: 1, Count: 50}
	cols := all("embed.weight")
	cols[1] = safetensors.DimSlice{Start: 3, Step: 7, Count: 30}
	last := all("layer.0.w")
	last[1] = safetensors.DimSlice{Start: 30, Step: 1, Count: 1}
	rowsStep := all("head")
	rowsStep[0] = safetensors.DimSlice{Start: 1, Step: 3, Count: 2}
	reqs := []Request{
		{Name: "embed.bias"},
		{Name: "layer.0.scale"},
		{Name: "layer.0.empty"},
		{Name: "embed.weight", Slice: rows},
		{Name: "embed.weight", Slice: cols},
		{Name: "layer.0.w", Slice: last},
		{Name: "head", Slice: rowsStep},
	}
	for _, gap := range []int64{0, 1, 64} {
		f, err := ck.Fetch(context.Background(), reqs, HostAllocator, loader.Options{}, FetchOptions{MaxGap: gap})
		require.NoError(t, err)
		var read int64
		for i, r := range reqs {
			sel := r.Slice
			if sel == nil {
				sel = all(r.Name)
			}
			p := f.Pieces[i]
			assert.Equal(t, gather(want[r.Name], sel), selected(p), "%s %v, max gap %d", r.Name, r.Slice, gap)
			read += p.Plan.Size
		}
		assert.Equal(t, read, f.BytesRead)
		assert.Equal(t, read, f.Result.Bytes, "the loader moved the planned ranges")
		assert.Equal(t, 1, len(f.Pieces[3].Plan.Ranges), "a dim-0 slice is one range")
		require.NoError(t, f.Close())
	}
	_, err = ck.Fetch(context.Background(), []Request{{Name: "nope"}}, HostAllocator, loader.Options{}, FetchOptions{})
	require.ErrorIs(t, err, ErrNoTensor)
}

// writeSparse writes a safetensors file of a small F32 tensor "small"
// followed by a U8 tensor "big" of size bytes left as a hole, and returns
// its path and the small tensor's values.
func writeSparse(t *testing.T, size int64) (string, []float32) {
	t.Helper()
	vals := []float32{1.5, -2, 3.25, 4}
	header := map[string]any{
		"small": map[string]any{"dtype": "F32", "shape": []int{4}, "data_offsets": []int64{0, 16}},
		"big":   map[string]any{"dtype": "U8", "shape": []int64{size}, "data_offsets": []int64{16, 16 + size}},
	}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	for _, v := range vals {
		b, _ = binary.Append(b, binary.LittleEndian, v)
	}
	p := filepath.Join(t.TempDir(), "sparse.safetensors")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	require.NoError(t, os.Truncate(p, int64(len(b))+size))
	return p, vals
}

// viewPiece decodes a compact host piece as little-endian T.
func viewPiece[T float32 | int32](p Piece) ([]T, error) {
	b := p.Dest.(interface{ Bytes() []byte }).Bytes()[:p.Plan.Asked]
	out := make([]T, p.Plan.Asked/4)
	_, err := binary.Decode(b, binary.LittleEndian, out)
	return out, err
}

func TestLoadCountsHeadersAndData(t *testing.T) {
	s := writeSharded(t)
	ck, err := Open(context.Background(), s.index, Options{})
	require.NoError(t, err)
	defer ck.Close()
	l, err := ck.Load(context.Background(), HostAllocator, loader.Options{})
	require.NoError(t, err)
	defer l.Close()
	var size int64
	for name := range s.shards {
		st, err := os.Stat(filepath.Join(s.dir, name))
		require.NoError(t, err)
		size += st.Size()
	}
	assert.Equal(t, size, l.BytesRead, "every file's header and data, once")
}
