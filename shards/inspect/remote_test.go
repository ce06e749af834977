package inspect

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every kind of file describes the same on an rdmafs server as on a disk,
// through the same function (inspect over rdmafs once failed).
func TestFileLocalAndRemoteAlike(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	var st bytes.Buffer
	require.NoError(t, safetensors.Encode(&st, []safetensors.TensorData{{Name: "w", Dtype: "F32", Shape: []int64{2}, Data: make([]byte, 8)}}, map[string]string{"k": "v"}))
	write("m.safetensors", st.Bytes())
	write("model-00001-of-00001.safetensors", st.Bytes())
	write("model.safetensors.index.json", []byte(`{"metadata":{},"weight_map":{"w":"model-00001-of-00001.safetensors"}}`))
	var np bytes.Buffer
	require.NoError(t, npy.Encode(&np, npy.Array{Descr: "<i8", Shape: []int64{3}, Data: make([]byte, 24)}))
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
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	for _, name := range []string{"m.safetensors", "a.npy", "model.safetensors.index.json", "shard-0.tar"} {
		local, err := File(ctx, filepath.Join(dir, name), Options{FS: m})
		require.NoError(t, err)
		rem, err := File(ctx, remote+"/"+name, Options{FS: m})
		require.NoError(t, err, "%s over rdmafs", name)
		lj, _ := json.Marshal(local)
		rj, _ := json.Marshal(rem)
		if name == "model.safetensors.index.json" {
			li, ri := local.(*Index), rem.(*Index)
			require.Equal(t, ri.Files[0].Name, li.Files[0].Name, "index: local %s, remote %s", lj, rj)
			require.Equal(t, remote+"/model-00001-of-00001.safetensors", ri.Files[0].Path, "index: local %s, remote %s", lj, rj)
			require.Equal(t, ri.Bytes, li.Bytes, "index: local %s, remote %s", lj, rj)
			continue
		}
		require.Equal(t, rj, lj, "%s: local %s, remote %s", name, lj, rj)
		assert.True(t, bytes.Contains([]byte(rem.String()), []byte(remote+"/"+name)), "%s: the text does not name the URL:\n%s", name, rem)
	}
	_, err = File(ctx, remote+"/absent.safetensors", Options{FS: m})
	assert.ErrorIs(t, err, fs.ErrNotExist, "a missing remote file")
	// A directory is taken as a load takes it: this one holds one index.
	rep, err := File(ctx, remote+"/", Options{FS: m})
	if assert.NoError(t, err, "a directory holding one index") {
		assert.IsType(t, (*Index)(nil), rep, "a directory holding one index was described as %T", rep)
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
	_, err = File(ctx, remote+"/empty", Options{FS: m})
	assert.Error(t, err, "a directory holding no checkpoint was described")
	write("notes.txt", []byte("x"))
	_, err = File(ctx, remote+"/notes.txt", Options{FS: m})
	assert.ErrorIs(t, err, ErrUnknownType, "an unknown type")
}
