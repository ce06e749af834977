package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspectTensorFile is Tensors on a local file, with its report's text.
func inspectTensorFile(path string) (Report, string, error) {
	m, err := vfs.New()
	if err != nil {
		return nil, "", err
	}
	defer m.Close()
	rep, err := Tensors(context.Background(), path, Options{FS: m})
	if err != nil {
		return nil, "", err
	}
	return rep, rep.String(), nil
}

func writeTensorFile(t *testing.T, name string, encode func(*bytes.Buffer) error) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, encode(&buf))
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

func TestInspectTensorFileSafetensors(t *testing.T) {
	path := writeTensorFile(t, "m.SafeTensors", func(b *bytes.Buffer) error {
		return safetensors.Encode(b, []safetensors.TensorData{
			{Name: "w", Dtype: "F32", Shape: []int64{2, 3}, Data: make([]byte, 24)},
			{Name: "s", Dtype: "BF16", Shape: []int64{}, Data: make([]byte, 2)},
		}, map[string]string{"format": "pt"})
	})
	rep, text, err := inspectTensorFile(path)
	require.NoError(t, err)
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	var got struct {
		Format  string
		Tensors []struct {
			Name, Dtype string
			Shape       []int64
			Bytes       int64
			DataOffsets [2]int64 `json:"data_offsets"`
		}
		Metadata   map[string]string
		DataOffset int64 `json:"data_offset"`
		Bytes      int64
	}
	require.NoError(t, json.Unmarshal(js, &got))
	require.Equal(t, "safetensors", got.Format, "report %s", js)
	require.Len(t, got.Tensors, 2, "report %s", js)
	require.Equal(t, "pt", got.Metadata["format"], "report %s", js)
	require.EqualValues(t, 26, got.Bytes, "report %s", js)
	require.Zero(t, got.DataOffset%8, "report %s", js)
	w, s := got.Tensors[0], got.Tensors[1]
	assert.Equal(t, "w", w.Name, "tensors %s", js)
	assert.Equal(t, "F32", w.Dtype, "tensors %s", js)
	assert.Len(t, w.Shape, 2, "tensors %s", js)
	assert.EqualValues(t, 24, w.Bytes, "tensors %s", js)
	assert.Equal(t, [2]int64{0, 24}, w.DataOffsets, "tensors %s", js)
	assert.Equal(t, [2]int64{24, 26}, s.DataOffsets, "tensors %s", js)
	assert.Contains(t, string(js), `"shape":[]`, "scalar shape is not []: %s", js)
	for _, part := range []string{"2 tensors", "w ", "F32", "[2 3]", "[0, 24)", "format", "pt"} {
		assert.Contains(t, text, part, "text lacks %q:\n%s", part, text)
	}
}

func TestInspectTensorFileNPY(t *testing.T) {
	path := writeTensorFile(t, "a.npy", func(b *bytes.Buffer) error {
		return npy.Encode(b, npy.Array{Descr: "<f4", FortranOrder: true, Shape: []int64{3, 4}, Data: make([]byte, 48)})
	})
	rep, text, err := inspectTensorFile(path)
	require.NoError(t, err)
	js, _ := json.Marshal(rep)
	want := `{"format":"npy","version":"1.0","dtype":"\u003cf4","fortran_order":true,"shape":[3,4],"data_offset":128,"bytes":48}`
	assert.Equal(t, want, string(js), "report\n%s\nwant\n%s", js, want)
	for _, part := range []string{"npy 1.0", "<f4", "true", "[3 4]", "48 at offset 128"} {
		assert.Contains(t, text, part, "text lacks %q:\n%s", part, text)
	}
}

func TestInspectTensorFileErrors(t *testing.T) {
	rep, text, err := inspectTensorFile("shard-000.tar")
	assert.ErrorIs(t, err, ErrUnknownType, "tar: got %v %q %v, want ErrUnknownType", rep, text, err)
	assert.True(t, rep == nil, "tar: got %v %q %v, want ErrUnknownType", rep, text, err)
	assert.Empty(t, text, "tar: got %v %q %v, want ErrUnknownType", rep, text, err)
	bad := writeTensorFile(t, "bad.safetensors", func(b *bytes.Buffer) error { _, err := b.WriteString("short"); return err })
	_, _, err = inspectTensorFile(bad)
	assert.ErrorIs(t, err, safetensors.ErrHeaderTruncated, "truncated safetensors: got %v", err)
	assert.ErrorContains(t, err, bad, "truncated safetensors: got %v", err)
	badNPY := writeTensorFile(t, "bad.npy", func(b *bytes.Buffer) error { _, err := b.WriteString("PK\x03\x04 zip"); return err })
	_, _, err = inspectTensorFile(badNPY)
	assert.ErrorIs(t, err, npy.ErrNotNPY, "not npy: got %v", err)
	assert.ErrorContains(t, err, badNPY, "not npy: got %v", err)
}
