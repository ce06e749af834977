package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
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
	if err := encode(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
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
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != "safetensors" || len(got.Tensors) != 2 || got.Metadata["format"] != "pt" || got.Bytes != 26 || got.DataOffset%8 != 0 {
		t.Fatalf("report %s", js)
	}
	w, s := got.Tensors[0], got.Tensors[1]
	if w.Name != "w" || w.Dtype != "F32" || len(w.Shape) != 2 || w.Bytes != 24 || w.DataOffsets != [2]int64{0, 24} || s.DataOffsets != [2]int64{24, 26} {
		t.Errorf("tensors %s", js)
	}
	if !strings.Contains(string(js), `"shape":[]`) {
		t.Errorf("scalar shape is not []: %s", js)
	}
	for _, part := range []string{"2 tensors", "w ", "F32", "[2 3]", "[0, 24)", "format", "pt"} {
		if !strings.Contains(text, part) {
			t.Errorf("text lacks %q:\n%s", part, text)
		}
	}
}

func TestInspectTensorFileNPY(t *testing.T) {
	path := writeTensorFile(t, "a.npy", func(b *bytes.Buffer) error {
		return npy.Encode(b, npy.Array{Descr: "<f4", FortranOrder: true, Shape: []int64{3, 4}, Data: make([]byte, 48)})
	})
	rep, text, err := inspectTensorFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rep)
	want := `{"format":"npy","version":"1.0","dtype":"\u003cf4","fortran_order":true,"shape":[3,4],"data_offset":128,"bytes":48}`
	if string(js) != want {
		t.Errorf("report\n%s\nwant\n%s", js, want)
	}
	for _, part := range []string{"npy 1.0", "<f4", "true", "[3 4]", "48 at offset 128"} {
		if !strings.Contains(text, part) {
			t.Errorf("text lacks %q:\n%s", part, text)
		}
	}
}

func TestInspectTensorFileErrors(t *testing.T) {
	if rep, text, err := inspectTensorFile("shard-000.tar"); !errors.Is(err, ErrUnknownType) || rep != nil || text != "" {
		t.Errorf("tar: got %v %q %v, want ErrUnknownType", rep, text, err)
	}
	bad := writeTensorFile(t, "bad.safetensors", func(b *bytes.Buffer) error { _, err := b.WriteString("short"); return err })
	if _, _, err := inspectTensorFile(bad); !errors.Is(err, safetensors.ErrHeaderTruncated) || !strings.Contains(err.Error(), bad) {
		t.Errorf("truncated safetensors: got %v", err)
	}
	badNPY := writeTensorFile(t, "bad.npy", func(b *bytes.Buffer) error { _, err := b.WriteString("PK\x03\x04 zip"); return err })
	if _, _, err := inspectTensorFile(badNPY); !errors.Is(err, npy.ErrNotNPY) || !strings.Contains(err.Error(), badNPY) {
		t.Errorf("not npy: got %v", err)
	}
}
