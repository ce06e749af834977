package safetensors

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseIndex(t *testing.T) {
	const idx = `{"metadata": {"total_size": 28}, "weight_map": {
		"lm_head.weight": "model-00002-of-00002.safetensors",
		"embed.weight": "model-00001-of-00002.safetensors",
		"layers.0.w": "model-00001-of-00002.safetensors",
		"layers.1.w": "sub/model-00002-of-00002.safetensors"}}`
	path := writeTemp(t, "model.safetensors.index.json", []byte(idx))
	ix, err := ParseIndex(path)
	require.NoError(t, err)
	wantFiles := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "sub/model-00002-of-00002.safetensors"}
	assert.True(t, slices.Equal(ix.Files, wantFiles), "Files = %q, want %q", ix.Files, wantFiles)
	dir := filepath.Dir(path)
	got := ix.FilePaths()
	assert.Equal(t, filepath.Join(dir, "sub", "model-00002-of-00002.safetensors"), got[2], "FilePaths = %q", got)
	assert.Equal(t, "model-00001-of-00002.safetensors", ix.WeightMap["embed.weight"], "WeightMap = %v", ix.WeightMap)
	assert.Len(t, ix.WeightMap, 4, "WeightMap = %v", ix.WeightMap)
	assert.Equal(t, float64(28), ix.Metadata["total_size"], "Metadata = %v", ix.Metadata)
}

func TestParseIndexRejects(t *testing.T) {
	tests := []struct {
		name, json string
		want       error
	}{
		{"not json", `{`, ErrIndex},
		{"not an object", `[]`, ErrIndex},
		{"no weight_map", `{"metadata":{}}`, ErrIndex},
		{"weight_map null", `{"weight_map":null}`, ErrIndex},
		{"weight_map array", `{"weight_map":["a"]}`, ErrIndex},
		{"empty weight_map", `{"weight_map":{}}`, ErrIndex},
		{"file not string", `{"weight_map":{"a":1}}`, ErrIndex},
		{"metadata not object", `{"metadata":1,"weight_map":{"a":"x.safetensors"}}`, ErrIndex},
		{"duplicate tensor", `{"weight_map":{"a":"x.safetensors","a":"y.safetensors"}}`, ErrDuplicateTensor},
		{"parent dir", `{"weight_map":{"a":"../x.safetensors"}}`, ErrIndexFileName},
		{"inner parent dir", `{"weight_map":{"a":"sub/../../x.safetensors"}}`, ErrIndexFileName},
		{"dotdot that stays inside", `{"weight_map":{"a":"sub/../x.safetensors"}}`, ErrIndexFileName},
		{"absolute", `{"weight_map":{"a":"/etc/passwd"}}`, ErrIndexFileName},
		{"empty name", `{"weight_map":{"a":""}}`, ErrIndexFileName},
		{"backslash", `{"weight_map":{"a":"..\\x.safetensors"}}`, ErrIndexFileName},
		{"nul byte", `{"weight_map":{"a":"x\u0000.safetensors"}}`, ErrIndexFileName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "m.safetensors.index.json", []byte(tt.json))
			_, err := ParseIndex(path)
			require.ErrorIs(t, err, tt.want, "got %v, want %v", err, tt.want)
			assert.ErrorContains(t, err, path, "error %q does not name the file", err)
		})
	}
	_, err := ParseIndex(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorIs(t, err, ErrRead, "missing file: got %v, want ErrRead", err)
}
