package safetensors

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenCases are the checked-in files: what Encode writes for them must
// match testdata byte for byte, and ParseHeader must accept them.
func goldenCases() map[string]func() ([]TensorData, map[string]string) {
	return map[string]func() ([]TensorData, map[string]string){
		"empty.safetensors": func() ([]TensorData, map[string]string) { return nil, nil },
		"small.safetensors": func() ([]TensorData, map[string]string) {
			return []TensorData{
				{Name: "a", Dtype: "U8", Shape: []int64{3}, Data: []byte{1, 2, 3}},
				{Name: "b", Dtype: "F32", Shape: []int64{2}, Data: []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}}, // 1.0, 2.0
			}, map[string]string{"format": "pt"}
		},
		"all_dtypes.safetensors": func() ([]TensorData, map[string]string) {
			return allDtypes(), map[string]string{"producer": "gdsload tests"}
		},
	}
}

func TestGoldenFiles(t *testing.T) {
	for name, build := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			tensors, meta := build()
			var buf bytes.Buffer
			require.NoError(t, Encode(&buf, tensors, meta))
			path := filepath.Join("testdata", name)
			if *update {
				require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			}
			golden, err := os.ReadFile(path)
			require.NoError(t, err, "%v (run go test -update to create it)", err)
			require.Equal(t, buf.Bytes(), golden, "Encode output differs from %s; if the change is intended, run go test -update", path)
			f, err := Open(path)
			require.NoError(t, err)
			defer f.Close()
			assert.Len(t, f.Header.Tensors, len(tensors), "%d tensors, want %d", len(f.Header.Tensors), len(tensors))
		})
	}
}

// TestSpecBytes assembles files by hand from the format description
// (u64 LE length, compact JSON, space padding to 8, data) and checks Encode
// produces exactly those bytes, as the reference serializer would.
func TestSpecBytes(t *testing.T) {
	tests := []struct {
		name    string
		tensors []TensorData
		meta    map[string]string
		header  string
		data    []byte
	}{
		{"empty", nil, nil, "{}      ", nil},
		{"empty metadata", nil, map[string]string{}, `{"__metadata__":{}}     `, nil},
		{
			"metadata then tensors by size then name",
			[]TensorData{
				{Name: "a", Dtype: "U8", Shape: []int64{3}, Data: []byte{1, 2, 3}},
				{Name: "b", Dtype: "F32", Shape: []int64{2}, Data: []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}},
			},
			map[string]string{"format": "pt"},
			`{"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}` + "      ",
			[]byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 1, 2, 3},
		},
		{
			"no html escaping, scalar shape",
			[]TensorData{{Name: "<s>&", Dtype: "BF16", Shape: []int64{}, Data: []byte{0x80, 0x3f}}},
			nil,
			`{"<s>&":{"dtype":"BF16","shape":[],"data_offsets":[0,2]}}` + "       ",
			[]byte{0x80, 0x3f},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, 0, len(tt.header)%8, "test header is %d bytes, not padded to 8", len(tt.header))
			want := binary.LittleEndian.AppendUint64(nil, uint64(len(tt.header)))
			want = append(append(want, tt.header...), tt.data...)
			var buf bytes.Buffer
			require.NoError(t, Encode(&buf, tt.tensors, tt.meta))
			require.Equal(t, want, buf.Bytes(), "Encode wrote\n%q\nwant\n%q", buf.Bytes(), want)
			_, err := parseBytes(want)
			require.NoError(t, err)
		})
	}
}
