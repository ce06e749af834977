package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func FuzzParseHeader(f *testing.F) {
	golden, _ := filepath.Glob(filepath.Join("testdata", "*.safetensors"))
	for _, p := range golden {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(rawFile(`{"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]},"__metadata__":{"x":"y"}}`, 3))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{}}`, 8))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind == nil {
				t.Fatalf("error %v is not an *Error with a Kind", err)
			}
			return
		}
		// Invariants of an accepted header.
		if h.DataOffset+h.DataLen != int64(len(data)) || h.DataOffset-8 > MaxHeaderSize {
			t.Fatalf("DataOffset %d DataLen %d for %d bytes", h.DataOffset, h.DataLen, len(data))
		}
		var next int64
		tensors := make([]TensorData, len(h.Tensors))
		for i, ti := range h.Tensors {
			if ti.Begin != next {
				t.Fatalf("tensor %q begins at %d, want %d", ti.Name, ti.Begin, next)
			}
			next = ti.End
			tensors[i] = TensorData{Name: ti.Name, Dtype: ti.Dtype, Shape: ti.Shape,
				Data: data[h.DataOffset+ti.Begin : h.DataOffset+ti.End]}
		}
		if next != h.DataLen {
			t.Fatalf("tensors end at %d, data region is %d", next, h.DataLen)
		}
		// Cross-check with the writer: what was accepted re-encodes, and the
		// re-encoded file parses to the same tensors.
		var buf bytes.Buffer
		if err := Encode(&buf, tensors, h.Metadata); err != nil {
			t.Fatalf("accepted header does not re-encode: %v", err)
		}
		h2, err := parseBytes(buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded file rejected: %v", err)
		}
		if len(h2.Tensors) != len(h.Tensors) || len(h2.Metadata) != len(h.Metadata) {
			t.Fatalf("re-encoded file has %d tensors, %d metadata", len(h2.Tensors), len(h2.Metadata))
		}
		for _, ti := range h.Tensors {
			t2, ok := h2.Tensor(ti.Name)
			if !ok || t2.Dtype != ti.Dtype || !equalShape(t2.Shape, ti.Shape) || t2.Bytes() != ti.Bytes() {
				t.Fatalf("tensor %q changed in re-encoding", ti.Name)
			}
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
			if !errors.As(err, &e) || e.Kind == nil {
				t.Fatalf("error %v is not an *Error with a Kind", err)
			}
			return
		}
		// Invariants of an accepted index: every shard stays inside the
		// index's directory, Files are the distinct shards, sorted.
		ix.Path = filepath.Join("/ckpt", "model.safetensors.index.json")
		for i, p := range ix.FilePaths() {
			if rel, err := filepath.Rel("/ckpt", p); err != nil || !filepath.IsLocal(rel) {
				t.Fatalf("shard %q resolves to %s, outside the index's directory", ix.Files[i], p)
			}
			if i > 0 && ix.Files[i-1] >= ix.Files[i] {
				t.Fatalf("Files not sorted and distinct: %q", ix.Files)
			}
		}
		if len(ix.WeightMap) == 0 {
			t.Fatal("an accepted index without tensors")
		}
		for name, file := range ix.WeightMap {
			if _, found := slices.BinarySearch(ix.Files, file); !found {
				t.Fatalf("tensor %q's shard %q is not in Files", name, file)
			}
		}
	})
}
