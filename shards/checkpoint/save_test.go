package checkpoint

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// deviceTensor stands in for device memory: readable only through ReadBack.
type deviceTensor struct{ b []byte }

func (d *deviceTensor) Size() int64 { return int64(len(d.b)) }
func (d *deviceTensor) ReadBack(_ context.Context, off int64, p []byte) error {
	copy(p, d.b[off:])
	return nil
}

func TestSaveSafetensorsReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	w1 := bytes.Repeat([]byte{1, 2, 3, 4}, 6) // F32 [2,3]
	b1 := []byte{9, 8, 7, 6, 5}               // U8 [5]
	w2 := bytes.Repeat([]byte{0xab, 0xcd}, 4) // BF16 [4], "in device memory"
	tensors := []SaveTensor{
		{Name: "layer.weight", Dtype: "F32", Shape: []int64{2, 3}, Data: loader.HostMemory(w1)},
		{Name: "layer.bias", Dtype: "U8", Shape: []int64{5}, Data: loader.HostMemory(b1)},
		{Name: "emb", Dtype: "BF16", Shape: []int64{4}, Data: &deviceTensor{b: w2}},
		{Name: "empty", Dtype: "F16", Shape: []int64{0, 3}, Data: loader.HostMemory(nil)},
	}
	_, err := SaveSafetensors(context.Background(), path, tensors, map[string]string{"format": "pt"}, loader.SaveOptions{})
	require.NoError(t, err)

	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, "pt", f.Header.Metadata["format"])
	for name, want := range map[string][]byte{"layer.weight": w1, "layer.bias": b1, "emb": w2, "empty": nil} {
		ti, ok := f.Header.Tensor(name)
		require.True(t, ok, name)
		got, err := io.ReadAll(f.TensorReader(ti))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), name)
	}

	// The same tensors through safetensors.Encode give the same file.
	var enc bytes.Buffer
	require.NoError(t, safetensors.Encode(&enc, []safetensors.TensorData{
		{Name: "layer.weight", Dtype: "F32", Shape: []int64{2, 3}, Data: w1},
		{Name: "layer.bias", Dtype: "U8", Shape: []int64{5}, Data: b1},
		{Name: "emb", Dtype: "BF16", Shape: []int64{4}, Data: w2},
		{Name: "empty", Dtype: "F16", Shape: []int64{0, 3}},
	}, map[string]string{"format": "pt"}))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, enc.Bytes(), raw)
}

func TestSaveSafetensorsRejectsBeforeCreating(t *testing.T) {
	dir := t.TempDir()
	for name, ts := range map[string][]SaveTensor{
		"size":      {{Name: "a", Dtype: "F32", Shape: []int64{3}, Data: loader.HostMemory(make([]byte, 8))}},
		"dtype":     {{Name: "a", Dtype: "F31", Shape: []int64{1}, Data: loader.HostMemory(make([]byte, 4))}},
		"duplicate": {{Name: "a", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}, {Name: "a", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}},
		"reserved":  {{Name: "__metadata__", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}},
		"subbyte":   {{Name: "a", Dtype: "F4", Shape: []int64{3}, Data: loader.HostMemory([]byte{1, 2})}},
		"overflow":  {{Name: "a", Dtype: "F64", Shape: []int64{1 << 40, 1 << 40}, Data: loader.HostMemory(nil)}},
		"no data":   {{Name: "a", Dtype: "U8", Shape: []int64{1}}},
	} {
		path := filepath.Join(dir, name+".safetensors")
		_, err := SaveSafetensors(context.Background(), path, ts, nil, loader.SaveOptions{})
		require.Error(t, err, name)
		require.ErrorContains(t, err, path, name)
		ents, _ := os.ReadDir(dir)
		require.Empty(t, ents, name)
	}
}

// TestSaveSafetensorsRefusesURL: a URL destination is refused before
// anything is written, and no local folder named after its scheme
// appears, whether or not one already exists.
func TestSaveSafetensorsRefusesURL(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ts := []SaveTensor{{Name: "a", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}}
	for _, url := range []string{"s3://models/x.safetensors", "rdmafs://127.0.0.1:7420/x.safetensors"} {
		_, err := SaveSafetensors(context.Background(), url, ts, nil, loader.SaveOptions{})
		require.ErrorIs(t, err, ErrURLDestination, url)
		require.ErrorContains(t, err, url)
		ents, _ := os.ReadDir(dir)
		require.Empty(t, ents, url)
	}
	// A folder named like the scheme already there is not written into.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "s3:", "models"), 0o755))
	_, err := SaveSafetensors(context.Background(), "s3://models/x.safetensors", ts, nil, loader.SaveOptions{})
	require.ErrorIs(t, err, ErrURLDestination)
	ents, _ := os.ReadDir(filepath.Join(dir, "s3:", "models"))
	require.Empty(t, ents)
}

// TestSaveSafetensorsOntoADirectory: a directory as the destination is
// refused before anything is written, with EISDIR.
func TestSaveSafetensorsOntoADirectory(t *testing.T) {
	dir := t.TempDir()
	ts := []SaveTensor{{Name: "a", Dtype: "U8", Shape: []int64{1}, Data: loader.HostMemory([]byte{1})}}
	_, err := SaveSafetensors(context.Background(), dir, ts, nil, loader.SaveOptions{})
	require.ErrorIs(t, err, syscall.EISDIR)
	require.ErrorContains(t, err, dir)
	ents, _ := os.ReadDir(dir)
	require.Empty(t, ents)
}

func TestSaveLoadedFromHost(t *testing.T) {
	s := writeSharded(t)
	c := openOrSkip(t, s.index, loader.DirectAuto)
	l, err := c.Load(context.Background(), HostAllocator, loader.Options{ChunkSize: 64 << 10})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "merged.safetensors")
	res, err := l.Save(context.Background(), out, nil, loader.SaveOptions{})
	require.NoError(t, err)
	require.Equal(t, loader.RouteHost, res.Route)
	f, err := safetensors.Open(out)
	require.NoError(t, err)
	defer f.Close()
	for name, w := range s.want() {
		ti, ok := f.Header.Tensor(name)
		require.True(t, ok, name)
		got, err := io.ReadAll(f.TensorReader(ti))
		require.NoError(t, err)
		require.True(t, bytes.Equal(w.Data, got), name)
	}
	require.NoError(t, l.Close())
	_, err = l.Save(context.Background(), out, nil, loader.SaveOptions{})
	require.ErrorContains(t, err, "freed")
}
