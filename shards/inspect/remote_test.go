package inspect

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

// Every kind of file describes the same on an rdmafs server as on a disk,
// through the same function (inspect over rdmafs once failed).
func TestFileLocalAndRemoteAlike(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var st bytes.Buffer
	if err := safetensors.Encode(&st, []safetensors.TensorData{{Name: "w", Dtype: "F32", Shape: []int64{2}, Data: make([]byte, 8)}}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	write("m.safetensors", st.Bytes())
	write("model-00001-of-00001.safetensors", st.Bytes())
	write("model.safetensors.index.json", []byte(`{"metadata":{},"weight_map":{"w":"model-00001-of-00001.safetensors"}}`))
	var np bytes.Buffer
	if err := npy.Encode(&np, npy.Array{Descr: "<i8", Shape: []int64{3}, Data: make([]byte, 24)}); err != nil {
		t.Fatal(err)
	}
	write("a.npy", np.Bytes())
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, n := range []string{"s0.txt", "s0.cls", "s1.txt"} {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 3})
		tw.Write([]byte("abc"))
	}
	tw.Close()
	write("shard-0.tar", tb.Bytes())

	remote := rdmafstest.Serve(t, dir)
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, name := range []string{"m.safetensors", "a.npy", "model.safetensors.index.json", "shard-0.tar"} {
		local, err := File(ctx, filepath.Join(dir, name), Options{FS: m})
		if err != nil {
			t.Fatal(err)
		}
		rem, err := File(ctx, remote+"/"+name, Options{FS: m})
		if err != nil {
			t.Fatalf("%s over rdmafs: %v", name, err)
		}
		lj, _ := json.Marshal(local)
		rj, _ := json.Marshal(rem)
		if name == "model.safetensors.index.json" {
			li, ri := local.(*Index), rem.(*Index)
			if li.Files[0].Name != ri.Files[0].Name || ri.Files[0].Path != remote+"/model-00001-of-00001.safetensors" || li.Bytes != ri.Bytes {
				t.Fatalf("index: local %s, remote %s", lj, rj)
			}
			continue
		}
		if !bytes.Equal(lj, rj) {
			t.Fatalf("%s: local %s, remote %s", name, lj, rj)
		}
		if !bytes.Contains([]byte(rem.String()), []byte(remote+"/"+name)) {
			t.Errorf("%s: the text does not name the URL:\n%s", name, rem)
		}
	}
	if _, err := File(ctx, remote+"/absent.safetensors", Options{FS: m}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing remote file: %v", err)
	}
	// A directory is taken as a load takes it: this one holds one index.
	if rep, err := File(ctx, remote+"/", Options{FS: m}); err != nil {
		t.Errorf("a directory holding one index: %v", err)
	} else if _, ok := rep.(*Index); !ok {
		t.Errorf("a directory holding one index was described as %T", rep)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := File(ctx, remote+"/empty", Options{FS: m}); err == nil {
		t.Error("a directory holding no checkpoint was described")
	}
	write("notes.txt", []byte("x"))
	if _, err := File(ctx, remote+"/notes.txt", Options{FS: m}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("an unknown type: %v", err)
	}
}
