package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzParseHeader(f *testing.F) {
	golden, _ := filepath.Glob(filepath.Join("testdata", "*.safetensors"))
	for _, p := range golden {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add(rawFile(`{"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]},"__metadata__":{"x":"y"}}`, 3))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{}}`, 8))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e, "error %v is not an *Error with a Kind", err)
			require.Error(t, e.Kind, "error %v is not an *Error with a Kind", err)
			return
		}
		// Invariants of an accepted header.
		require.Equal(t, int64(len(data)), h.DataOffset+h.DataLen, "DataOffset %d DataLen %d for %d bytes", h.DataOffset, h.DataLen, len(data))
		require.LessOrEqual(t, h.DataOffset-8, int64(MaxHeaderSize), "DataOffset %d DataLen %d for %d bytes", h.DataOffset, h.DataLen, len(data))
		var next int64
		tensors := make([]TensorData, len(h.Tensors))
		for i, ti := range h.Tensors {
			require.Equal(t, next, ti.Begin, "tensor %q begins at %d, want %d", ti.Name, ti.Begin, next)
			next = ti.End
			tensors[i] = TensorData{Name: ti.Name, Dtype: ti.Dtype, Shape: ti.Shape,
				Data: data[h.DataOffset+ti.Begin : h.DataOffset+ti.End]}
		}
		require.Equal(t, h.DataLen, next, "tensors end at %d, data region is %d", next, h.DataLen)
		// Cross-check with the writer: what was accepted re-encodes, and the
		// re-encoded file parses to the same tensors.
		var buf bytes.Buffer
		require.NoError(t, Encode(&buf, tensors, h.Metadata), "accepted header does not re-encode")
		h2, err := parseBytes(buf.Bytes())
		require.NoError(t, err, "re-encoded file rejected")
		require.Len(t, h2.Tensors, len(h.Tensors), "re-encoded file has %d tensors, %d metadata", len(h2.Tensors), len(h2.Metadata))
		require.Len(t, h2.Metadata, len(h.Metadata), "re-encoded file has %d tensors, %d metadata", len(h2.Tensors), len(h2.Metadata))
		for _, ti := range h.Tensors {
			t2, ok := h2.Tensor(ti.Name)
			require.True(t, ok, "tensor %q changed in re-encoding", ti.Name)
			require.Equal(t, ti.Dtype, t2.Dtype, "tensor %q changed in re-encoding", ti.Name)
			require.True(t, equalShape(t2.Shape, ti.Shape), "tensor %q changed in re-encoding", ti.Name)
			require.Equal(t, ti.Bytes(), t2.Bytes(), "tensor %q changed in re-encoding", ti.Name)
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":12},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"x.safetensors","a":"y.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../x.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"sub/x.safetensors","b":7}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := parseIndex(data)
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e, "error %v is not an *Error with a Kind", err)
			require.Error(t, e.Kind, "error %v is not an *Error with a Kind", err)
			return
		}
		// Invariants of an accepted index: every shard stays inside the
		// index's directory, Files are the distinct shards, sorted.
		ix.Path = filepath.Join("/ckpt", "model.safetensors.index.json")
		for i, p := range ix.FilePaths() {
			rel, err := filepath.Rel("/ckpt", p)
			require.NoError(t, err, "shard %q resolves to %s, outside the index's directory", ix.Files[i], p)
			require.True(t, filepath.IsLocal(rel), "shard %q resolves to %s, outside the index's directory", ix.Files[i], p)
			require.False(t, i > 0 && ix.Files[i-1] >= ix.Files[i], "Files not sorted and distinct: %q", ix.Files)
		}
		require.NotEmpty(t, ix.WeightMap, "an accepted index without tensors")
		for name, file := range ix.WeightMap {
			_, found := slices.BinarySearch(ix.Files, file)
			require.True(t, found, "tensor %q's shard %q is not in Files", name, file)
		}
	})
}
