package loader_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

func TestSaveSafetensorsParsesWithTheShardsReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	w1 := bytes.Repeat([]byte{1, 2, 3, 4}, 6) // F32 [2,3]
	b1 := []byte{9, 8, 7, 6, 5}               // U8 [5]: leaves the next tensor unaligned
	w2 := bytes.Repeat([]byte{0xab, 0xcd}, 4) // BF16 [4]
	dev := &deviceTensor{b: w2}
	tensors := []loader.SaveTensor{
		{Name: "layer.weight", Dtype: "F32", Shape: []int64{2, 3}, Data: loader.HostMemory(w1)},
		{Name: "layer.bias", Dtype: "U8", Shape: []int64{5}, Data: loader.HostMemory(b1)},
		{Name: "emb", Dtype: "BF16", Shape: []int64{4}, Data: dev},
		{Name: "empty", Dtype: "F16", Shape: []int64{0, 3}, Data: loader.HostMemory(nil)},
	}
	res, err := loader.SaveSafetensors(context.Background(), path, tensors, map[string]string{"format": "pt"}, loader.SaveOptions{})
	require.NoError(t, err)
	require.Equal(t, loader.PathBounce, res.Route)

	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := f.Header
	require.Equal(t, "pt", h.Metadata["format"])
	var prevEnd int64
	for _, want := range []struct {
		name string
		data []byte
	}{{"layer.weight", w1}, {"layer.bias", b1}, {"emb", w2}, {"empty", nil}} {
		ti, ok := h.Tensor(want.name)
		require.True(t, ok, want.name)
		require.Equal(t, prevEnd, ti.Begin, "%s is not laid out in the given order", want.name)
		prevEnd = ti.End
		got, err := io.ReadAll(f.TensorReader(ti))
		require.NoError(t, err)
		require.Equal(t, len(want.data), len(got), want.name)
		require.True(t, bytes.Equal(want.data, got), want.name)
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	hlen := int(raw[0]) | int(raw[1])<<8
	require.Zero(t, (8+hlen)%8, "header not padded to 8 bytes")
}

func TestSaveSafetensorsRejectsBeforeCreating(t *testing.T) {
	dir := t.TempDir()
	for name, ts := range map[string][]loader.SaveTensor{
		"size":      {{Name: "a", Dtype: "F32", Shape: []int64{3}, Data: loader.HostMemory(make([]byte, 8))}},
		"dtype":     {{Name: "a", Dtype: "F31", Shape: []int64{1}, Data: loader.HostMemory(make([]byte, 4))}},
		"duplicate": {{Name: "a", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}, {Name: "a", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}},
		"reserved":  {{Name: "__metadata__", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}},
		"subbyte":   {{Name: "a", Dtype: "F4", Shape: []int64{3}, Data: loader.HostMemory([]byte{1, 2})}},
		"overflow":  {{Name: "a", Dtype: "F64", Shape: []int64{1 << 40, 1 << 40}, Data: loader.HostMemory(nil)}},
	} {
		path := filepath.Join(dir, name+".safetensors")
		_, err := loader.SaveSafetensors(context.Background(), path, ts, nil, loader.SaveOptions{})
		require.Error(t, err, name)
		require.ErrorContains(t, err, path)
		ents, _ := os.ReadDir(dir)
		require.Empty(t, ents, name)
	}
}

// TestSaveSafetensorsKnowsEveryDtype keeps the loader's copy of the dtype
// table equal to the reference in shards/safetensors.
func TestSaveSafetensorsKnowsEveryDtype(t *testing.T) {
	dir := t.TempDir()
	for _, dt := range safetensors.Dtypes() {
		bits, _ := safetensors.DtypeBits(dt)
		n := int64(8) // elements: whole bytes for every sub-byte size
		data := make([]byte, n*bits/8)
		path := filepath.Join(dir, dt+".safetensors")
		_, err := loader.SaveSafetensors(context.Background(), path,
			[]loader.SaveTensor{{Name: "t", Dtype: dt, Shape: []int64{n}, Data: loader.HostMemory(data)}}, nil, loader.SaveOptions{})
		require.NoError(t, err, dt)
		f, err := safetensors.Open(path)
		require.NoError(t, err, dt)
		f.Close()
	}
}

type deviceTensor struct{ b []byte }

func (d *deviceTensor) Size() int64 { return int64(len(d.b)) }
func (d *deviceTensor) ReadBack(_ context.Context, off int64, p []byte) error {
	copy(p, d.b[off:])
	return nil
}
