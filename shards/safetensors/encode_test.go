package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// patterned returns n bytes that differ from tensor to tensor.
func patterned(n int64, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// allDtypes returns one tensor of every dtype, shaped so sub-byte dtypes
// fill whole bytes.
func allDtypes() []TensorData {
	var ts []TensorData
	for i, d := range Dtypes() {
		bits, _ := DtypeBits(d)
		shape := []int64{2, 4} // 8 elements: whole bytes for 4- and 6-bit dtypes
		ts = append(ts, TensorData{Name: "t." + strings.ToLower(d), Dtype: d, Shape: shape, Data: patterned(8*bits/8, byte(i))})
	}
	return ts
}

func TestEncodeRoundTripAllDtypes(t *testing.T) {
	tensors := append(allDtypes(),
		TensorData{Name: "scalar", Dtype: "F32", Shape: []int64{}, Data: patterned(4, 99)},
		TensorData{Name: "empty", Dtype: "BF16", Shape: []int64{3, 0}, Data: nil},
		TensorData{Name: "f4.odd.dims", Dtype: "F4", Shape: []int64{3, 2}, Data: patterned(3, 5)},
	)
	meta := map[string]string{"format": "pt", "note": "<&> \"quoted\""}
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, tensors, meta))
	file := buf.Bytes()
	n := binary.LittleEndian.Uint64(file)
	assert.Zero(t, n%8, "header length %d is not a multiple of 8", n)
	path := writeTemp(t, "all.safetensors", file)
	f, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := f.Header
	assert.Equal(t, int64(8+n), h.DataOffset, "DataOffset %d, FileSize %d; want %d, %d", h.DataOffset, h.FileSize(), 8+n, len(file))
	assert.Equal(t, int64(len(file)), h.FileSize(), "DataOffset %d, FileSize %d; want %d, %d", h.DataOffset, h.FileSize(), 8+n, len(file))
	assert.Len(t, h.Metadata, 2, "metadata %v, want %v", h.Metadata, meta)
	assert.Equal(t, meta["note"], h.Metadata["note"], "metadata %v, want %v", h.Metadata, meta)
	require.Len(t, h.Tensors, len(tensors), "%d tensors, want %d", len(h.Tensors), len(tensors))
	var prevBits int64 = 64
	for _, want := range tensors {
		got, ok := h.Tensor(want.Name)
		require.True(t, ok, "tensor %q missing", want.Name)
		assert.Equal(t, want.Dtype, got.Dtype, "%q: got %s%v %d bytes, want %s%v %d", want.Name, got.Dtype, got.Shape, got.Bytes(), want.Dtype, want.Shape, len(want.Data))
		assert.True(t, equalShape(got.Shape, want.Shape), "%q: got %s%v %d bytes, want %s%v %d", want.Name, got.Dtype, got.Shape, got.Bytes(), want.Dtype, want.Shape, len(want.Data))
		assert.Equal(t, int64(len(want.Data)), got.Bytes(), "%q: got %s%v %d bytes, want %s%v %d", want.Name, got.Dtype, got.Shape, got.Bytes(), want.Dtype, want.Shape, len(want.Data))
		data, err := io.ReadAll(f.TensorReader(got))
		assert.NoError(t, err, "%q: data differs (err %v)", want.Name, err)
		assert.True(t, bytes.Equal(data, want.Data), "%q: data differs", want.Name)
	}
	// Layout: decreasing element size in whole bytes, so every tensor is
	// aligned to it (sub-byte tensors fill whole bytes; the reference puts
	// BOOL after them).
	for _, ti := range h.Tensors {
		bits, _ := DtypeBits(ti.Dtype)
		bits = (bits + 7) / 8 * 8
		assert.LessOrEqual(t, bits, prevBits, "%q (%d bits) follows a %d-bit tensor", ti.Name, bits, prevBits)
		prevBits = bits
		assert.False(t, bits >= 8 && ti.Begin%(bits/8) != 0, "%q begins at %d, not aligned to %d", ti.Name, ti.Begin, bits/8)
	}
	// Deterministic output.
	var again bytes.Buffer
	err = Encode(&again, tensors, meta)
	assert.NoError(t, err, "second Encode differs (err %v)", err)
	assert.Equal(t, file, again.Bytes(), "second Encode differs (err %v)", err)
}

func TestEncodeRejects(t *testing.T) {
	ok := TensorData{Name: "a", Dtype: "F32", Shape: []int64{2}, Data: make([]byte, 8)}
	tests := []struct {
		name    string
		tensors []TensorData
		meta    map[string]string
		want    error
	}{
		{"duplicate name", []TensorData{ok, ok}, nil, ErrDuplicateTensor},
		{"reserved name", []TensorData{{Name: "__metadata__", Dtype: "U8", Shape: []int64{0}}}, nil, ErrInvalidTensor},
		{"invalid utf-8 name", []TensorData{{Name: "\xff", Dtype: "U8", Shape: []int64{0}}}, nil, ErrInvalidTensor},
		{"unknown dtype", []TensorData{{Name: "a", Dtype: "Q8", Shape: []int64{0}}}, nil, ErrUnknownDtype},
		{"negative dim", []TensorData{{Name: "a", Dtype: "U8", Shape: []int64{-1}}}, nil, ErrInvalidShape},
		{"sub-byte", []TensorData{{Name: "a", Dtype: "F4", Shape: []int64{1}, Data: []byte{0}}}, nil, ErrSubByte},
		{"short data", []TensorData{{Name: "a", Dtype: "F32", Shape: []int64{2}, Data: make([]byte, 7)}}, nil, ErrSizeMismatch},
		{"overflow", []TensorData{{Name: "a", Dtype: "U64", Shape: []int64{1 << 62}}}, nil, ErrShapeOverflow},
		{"invalid utf-8 metadata", []TensorData{ok}, map[string]string{"k": "\xfe"}, ErrMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Encode(&buf, tt.tensors, tt.meta)
			require.ErrorIs(t, err, tt.want, "got %v, want %v", err, tt.want)
			assert.Equal(t, 0, buf.Len(), "wrote %d bytes before failing", buf.Len())
		})
	}
}

func TestDtypeBits(t *testing.T) {
	want := map[string]int64{
		"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
		"I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
		"C64": 64, "F64": 64, "I64": 64, "U64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
	}
	got := Dtypes()
	assert.Len(t, got, len(want), "Dtypes() has %d entries, want %d", len(got), len(want))
	for d, bits := range want {
		got, ok := DtypeBits(d)
		assert.True(t, ok, "DtypeBits(%q) = %d, %v; want %d", d, got, ok, bits)
		assert.Equal(t, bits, got, "DtypeBits(%q) = %d, %v; want %d", d, got, ok, bits)
	}
	for _, d := range []string{"", "f32", "F8", "C128", "F16 "} {
		_, ok := DtypeBits(d)
		assert.False(t, ok, "DtypeBits(%q) accepted", d)
	}
}

// The writer orders tensors as the reference does: its dtype enumeration,
// descending, then names. Among 64-bit dtypes that is U64, I64, F64, C64,
// whatever the names say.
func TestEncodeOrderFollowsTheReference(t *testing.T) {
	for _, d := range Dtypes() {
		_, ok := dtypeRanks[d]
		assert.True(t, ok, "dtype %s has no place in the reference order", d)
	}
	bytesOf := func(d string) int64 { b, _ := DtypeBits(d); return (b + 7) / 8 }
	for a, ra := range dtypeRanks {
		for b, rb := range dtypeRanks {
			assert.False(t, ra < rb && bytesOf(a) > bytesOf(b), "%s (%d bytes) ranks below %s (%d bytes): alignment would break", a, bytesOf(a), b, bytesOf(b))
		}
	}
	specs := []TensorSpec{
		{Name: "a", Dtype: "C64", Shape: []int64{1}}, {Name: "b", Dtype: "F64", Shape: []int64{1}},
		{Name: "c", Dtype: "I64", Shape: []int64{1}}, {Name: "d", Dtype: "U64", Shape: []int64{1}},
		{Name: "e", Dtype: "BOOL", Shape: []int64{1}}, {Name: "f", Dtype: "U8", Shape: []int64{1}},
		{Name: "g", Dtype: "BF16", Shape: []int64{1}}, {Name: "h", Dtype: "F16", Shape: []int64{1}},
		{Name: "i", Dtype: "F32", Shape: []int64{1}}, {Name: "j", Dtype: "I32", Shape: []int64{1}},
	}
	layout, _, err := EncodeHeader(specs, nil)
	require.NoError(t, err)
	var got []string
	for _, ti := range layout {
		got = append(got, ti.Name)
	}
	want := []string{"d", "c", "b", "a", "i", "j", "g", "h", "f", "e"}
	require.True(t, slices.Equal(got, want), "layout order %v, the reference writes %v", got, want)
}
