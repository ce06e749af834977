package safetensors

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseIndex(t *testing.T) {
	const idx = `{"metadata": {"total_size": 28}, "weight_map": {
		"lm_head.weight": "model-00002-of-00002.safetensors",
		"embed.weight": "model-00001-of-00002.safetensors",
		"layers.0.w": "model-00001-of-00002.safetensors",
		"layers.1.w": "sub/model-00002-of-00002.safetensors"}}`
	path := writeTemp(t, "model.safetensors.index.json", []byte(idx))
	ix, err := ParseIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "sub/model-00002-of-00002.safetensors"}
	if !slices.Equal(ix.Files, wantFiles) {
		t.Errorf("Files = %q, want %q", ix.Files, wantFiles)
	}
	dir := filepath.Dir(path)
	if got := ix.FilePaths(); got[2] != filepath.Join(dir, "sub", "model-00002-of-00002.safetensors") {
		t.Errorf("FilePaths = %q", got)
	}
	if ix.WeightMap["embed.weight"] != "model-00001-of-00002.safetensors" || len(ix.WeightMap) != 4 {
		t.Errorf("WeightMap = %v", ix.WeightMap)
	}
	if ix.Metadata["total_size"] != float64(28) {
		t.Errorf("Metadata = %v", ix.Metadata)
	}
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
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if _, err := ParseIndex(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, ErrRead) {
		t.Errorf("missing file: got %v, want ErrRead", err)
	}
}
