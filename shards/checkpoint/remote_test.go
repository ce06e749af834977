package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

func remoteMux(t *testing.T) *vfs.Mux {
	t.Helper()
	m, err := vfs.New(rdmafsfs.With(rdmafstest.Options()...))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// A checkpoint on an rdmafs server opens and loads through the same Open
// as a local one, byte for byte: a safetensors file, a .npy file, a
// sharded checkpoint through its index, and a directory holding one
// (once, each failed with "stat rdmafs://...: no such file").
func TestOpenRemoteCheckpoint(t *testing.T) {
	s := writeSharded(t)
	rng := newRNG()
	single := []safetensors.TensorData{tensor(rng, "w", "F32", 3, 5), tensor(rng, "b", "BF16", 7)}
	require.NoError(t, os.Mkdir(filepath.Join(s.dir, "st"), 0o755))
	writeSafetensors(t, filepath.Join(s.dir, "st"), "model.safetensors", single, map[string]string{"format": "pt"})
	arr := randomBytes(4 * 33)
	writeNPY(t, s.dir, "emb.npy", npy.Array{Descr: "<f4", Shape: []int64{33}, Data: arr})
	remote := rdmafstest.Serve(t, s.dir)
	m := remoteMux(t)
	ctx := context.Background()

	wantSingle := map[string][]byte{"w": single[0].Data, "b": single[1].Data}
	wantSharded := map[string][]byte{}
	for name, td := range s.want() {
		wantSharded[name] = td.Data
	}
	for _, tc := range []struct {
		name, url string
		want      map[string][]byte
		files     int
		metadata  map[string]string
	}{
		{"safetensors", remote + "/st/model.safetensors", wantSingle, 1, map[string]string{"format": "pt"}},
		{"directory of one file", remote + "/st", wantSingle, 1, map[string]string{"format": "pt"}},
		{"npy", remote + "/emb.npy", map[string][]byte{"emb": arr}, 1, nil},
		{"sharded index", remote + "/model.safetensors.index.json", wantSharded, 3, map[string]string{"total_size": "0"}},
		{"directory of an index", remote + "/", wantSharded, 3, map[string]string{"total_size": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(ctx, tc.url, Options{FS: m})
			require.NoError(t, err)
			defer c.Close()
			require.Len(t, c.Files(), tc.files)
			for _, f := range c.Files() {
				require.True(t, strings.HasPrefix(f.Path, remote+"/"), "files are named by URL: %s", f.Path)
			}
			require.Equal(t, tc.metadata, c.Metadata())
			l, err := c.Load(ctx, HostAllocator, loader.Options{ChunkSize: 64 << 10, Checksum: loader.ChecksumSHA256})
			require.NoError(t, err)
			defer l.Close()
			require.Len(t, l.Tensors, len(tc.want))
			for name, want := range tc.want {
				require.Equal(t, want, l.Bytes(name), name)
			}
			require.Equal(t, tc.metadata, l.Metadata)
		})
	}

	// Missing, remote or local, through the same function.
	for _, p := range []string{remote + "/absent.safetensors", filepath.Join(s.dir, "absent.safetensors")} {
		_, err := Open(ctx, p, Options{FS: m})
		require.ErrorIs(t, err, fs.ErrNotExist, p)
	}
	require.NoError(t, os.Remove(filepath.Join(s.dir, "model-00002-of-00003.safetensors")))
	_, err := Open(ctx, remote+"/model.safetensors.index.json", Options{FS: m})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "model-00002-of-00003.safetensors")
}

// Without an FS, Open makes one (the token from GDSLOAD_TOKEN) and Close
// closes it.
func TestOpenRemoteWithoutFS(t *testing.T) {
	dir := t.TempDir()
	rng := newRNG()
	writeSafetensors(t, dir, "m.safetensors", []safetensors.TensorData{tensor(rng, "x", "U8", 10)}, nil)
	remote := rdmafstest.Serve(t, dir)
	t.Setenv("GDSLOAD_TOKEN", string(rdmafstest.Token))
	c, err := Open(context.Background(), remote+"/m.safetensors", Options{})
	require.NoError(t, err)
	require.Len(t, c.Files(), 1)
	require.NoError(t, c.Close())
}

// Typed views: the dtype's Go type, refused for another type, device
// memory or a freed checkpoint.
func TestView(t *testing.T) {
	dir := t.TempDir()
	f32 := safetensors.TensorData{Name: "w", Dtype: "F32", Shape: []int64{2}, Data: []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}}
	i64 := safetensors.TensorData{Name: "ids", Dtype: "I64", Shape: []int64{1}, Data: []byte{7, 0, 0, 0, 0, 0, 0, 0}}
	half := safetensors.TensorData{Name: "h", Dtype: "BF16", Shape: []int64{1}, Data: []byte{0x80, 0x3f}}
	empty := safetensors.TensorData{Name: "e", Dtype: "F64", Shape: []int64{0}, Data: nil}
	c64 := safetensors.TensorData{Name: "z", Dtype: "C64", Shape: []int64{1}, Data: make([]byte, 8)}
	p := writeSafetensors(t, dir, "v.safetensors", []safetensors.TensorData{f32, i64, half, empty, c64}, nil)
	c, err := Open(context.Background(), p, Options{})
	require.NoError(t, err)
	defer c.Close()
	l, err := c.Load(context.Background(), HostAllocator, loader.Options{})
	require.NoError(t, err)

	w, err := View[float32](l, "w")
	require.NoError(t, err)
	require.Equal(t, []float32{1, -2}, w)
	ids, err := View[int64](l, "ids")
	require.NoError(t, err)
	require.Equal(t, []int64{7}, ids)
	h, err := View[uint16](l, "h")
	require.NoError(t, err)
	require.Equal(t, []uint16{0x3f80}, h, "bf16 as its raw bits")
	e, err := View[float64](l, "e")
	require.NoError(t, err)
	require.Empty(t, e)

	_, err = View[float64](l, "w")
	require.ErrorIs(t, err, ErrView)
	require.ErrorContains(t, err, "view it as float32")
	_, err = View[uint8](l, "z")
	require.ErrorIs(t, err, ErrView)
	_, err = View[float32](l, "nope")
	require.ErrorContains(t, err, "no tensor")

	w[0] = 3 // a view, not a copy
	again, _ := View[float32](l, "w")
	require.Equal(t, float32(3), again[0])
	require.Equal(t, math.Float32bits(3), uint32(l.Bytes("w")[0])|uint32(l.Bytes("w")[1])<<8|uint32(l.Bytes("w")[2])<<16|uint32(l.Bytes("w")[3])<<24)

	require.NoError(t, l.Close())
	_, err = View[float32](l, "w")
	require.ErrorIs(t, err, ErrView)
}

// SaveSharded lays tensors out as the Hugging Face writers do, within the
// shard size, with an index that Open reads back to the same tensors;
// Loaded.SaveSharded and Loaded.Save round-trip a sharded checkpoint.
func TestSaveSharded(t *testing.T) {
	s := writeSharded(t)
	ctx := context.Background()
	c, err := Open(ctx, s.index, Options{})
	require.NoError(t, err)
	defer c.Close()
	l, err := c.Load(ctx, HostAllocator, loader.Options{})
	require.NoError(t, err)
	defer l.Close()

	out := t.TempDir()
	res, err := l.SaveSharded(ctx, out, map[string]string{"format": "pt"}, ShardedOptions{MaxShardBytes: 100000, Prefix: "merged"})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(out, "merged.safetensors.index.json"), res.Index)
	require.GreaterOrEqual(t, len(res.Files), 2, "the 171 KB embedding alone is over the shard size")
	for i, f := range res.Files {
		require.Contains(t, f.Path, "merged-0000"+string(rune('1'+i))+"-of-")
	}
	var ix struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	b, err := os.ReadFile(res.Index)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &ix))
	require.EqualValues(t, c.Bytes(), ix.Metadata["total_size"])
	require.Equal(t, "pt", ix.Metadata["format"])
	require.Len(t, ix.WeightMap, len(l.Tensors))

	back, err := Open(ctx, res.Index, Options{})
	require.NoError(t, err)
	defer back.Close()
	lb, err := back.Load(ctx, HostAllocator, loader.Options{})
	require.NoError(t, err)
	defer lb.Close()
	for name, td := range s.want() {
		require.Equal(t, td.Data, lb.Bytes(name), name)
	}

	merged := filepath.Join(t.TempDir(), "merged.safetensors")
	_, err = l.Save(ctx, merged, l.Metadata, loader.SaveOptions{})
	require.NoError(t, err)
	one, err := Open(ctx, merged, Options{})
	require.NoError(t, err)
	require.Len(t, one.Files(), 1)
	require.NoError(t, one.Close())

	// Refused before anything is written.
	empty := t.TempDir()
	_, err = SaveSharded(ctx, empty, []SaveTensor{{Name: "x", Dtype: "F32", Shape: []int64{2}, Data: loader.HostMemory(make([]byte, 4))}}, nil, ShardedOptions{})
	require.ErrorContains(t, err, "needs 8 bytes")
	_, err = SaveSharded(ctx, empty, []SaveTensor{{Name: "x", Dtype: "F99", Shape: []int64{1}, Data: loader.HostMemory(make([]byte, 4))}}, nil, ShardedOptions{})
	require.Error(t, err)
	ents, _ := os.ReadDir(empty)
	require.Empty(t, ents)
	for _, o := range []ShardedOptions{{MaxShardBytes: -1}, {Prefix: "a/b"}, {Prefix: ".x"}, {Prefix: "a\x00b"}} {
		_, err := SaveSharded(ctx, empty, nil, nil, o)
		require.Error(t, err, "%+v", o)
	}
	require.False(t, errors.Is(err, ErrView))
}
