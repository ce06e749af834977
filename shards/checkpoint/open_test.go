package checkpoint

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

// Open refuses broken checkpoints with an error that names the files
// involved and matches the cause.
func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, s *sharded) string // returns the path to open
		is    error
		says  []string
	}{{
		name: "missing shard file",
		setup: func(t *testing.T, s *sharded) string {
			require.NoError(t, os.Remove(filepath.Join(s.dir, "model-00002-of-00003.safetensors")))
			return s.index
		},
		is:   fs.ErrNotExist,
		says: []string{"model-00002-of-00003.safetensors", "model.safetensors.index.json"},
	}, {
		name: "bad shard header",
		setup: func(t *testing.T, s *sharded) string {
			require.NoError(t, os.WriteFile(filepath.Join(s.dir, "model-00003-of-00003.safetensors"), []byte{200, 0, 0, 0, 0, 0, 0, 0, '{'}, 0o644))
			return s.index
		},
		is:   safetensors.ErrHeaderTruncated,
		says: []string{"model-00003-of-00003.safetensors"},
	}, {
		name: "tensor mapped to another shard",
		setup: func(t *testing.T, s *sharded) string {
			s.weightMap["odd"] = "model-00002-of-00003.safetensors"
			return writeIndex(t, s.dir, "model.safetensors.index.json", s.weightMap)
		},
		is:   ErrWeightMap,
		says: []string{`"odd"`, "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors"},
	}, {
		name: "listed tensor missing from its shard",
		setup: func(t *testing.T, s *sharded) string {
			s.weightMap["ghost"] = "model-00003-of-00003.safetensors"
			return writeIndex(t, s.dir, "model.safetensors.index.json", s.weightMap)
		},
		is:   ErrWeightMap,
		says: []string{`"ghost"`, "model-00003-of-00003.safetensors"},
	}, {
		name: "tensor in a shard but not listed",
		setup: func(t *testing.T, s *sharded) string {
			delete(s.weightMap, "odd")
			return writeIndex(t, s.dir, "model.safetensors.index.json", s.weightMap)
		},
		is:   ErrWeightMap,
		says: []string{`"odd"`, "model-00001-of-00003.safetensors", "does not list"},
	}, {
		name: "tensor in two shards",
		setup: func(t *testing.T, s *sharded) string {
			dup := append(s.shards["model-00003-of-00003.safetensors"], tensor(newRNG(), "embed.bias", "F32", 3))
			writeSafetensors(t, s.dir, "model-00003-of-00003.safetensors", dup, nil)
			return s.index
		},
		is:   ErrDuplicateTensor,
		says: []string{`"embed.bias"`, "model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors"},
	}, {
		name: "index without weight_map",
		setup: func(t *testing.T, s *sharded) string {
			p := filepath.Join(s.dir, "model.safetensors.index.json")
			require.NoError(t, os.WriteFile(p, []byte(`{"metadata": {}}`), 0o644))
			return p
		},
		is:   safetensors.ErrIndex,
		says: []string{"weight_map"},
	}, {
		name: "not a checkpoint",
		setup: func(t *testing.T, s *sharded) string {
			p := filepath.Join(s.dir, "model.bin")
			require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
			return p
		},
		is:   ErrFormat,
		says: []string{"model.bin", ".safetensors"},
	}, {
		name: "directory of shards without index",
		setup: func(t *testing.T, s *sharded) string {
			require.NoError(t, os.Remove(s.index))
			return s.dir
		},
		is:   ErrFormat,
		says: []string{"3 .safetensors files", "no index"},
	}, {
		name: "empty directory",
		setup: func(t *testing.T, s *sharded) string {
			return t.TempDir()
		},
		is:   ErrFormat,
		says: []string{"no .safetensors file"},
	}, {
		name: "npy with a bad header",
		setup: func(t *testing.T, s *sharded) string {
			p := filepath.Join(s.dir, "x.npy")
			require.NoError(t, os.WriteFile(p, []byte("PK\x03\x04 zip"), 0o644))
			return p
		},
		is:   npy.ErrNotNPY,
		says: []string{"x.npy"},
	}, {
		name: "no such path",
		setup: func(t *testing.T, s *sharded) string {
			return filepath.Join(s.dir, "nope.safetensors")
		},
		is:   fs.ErrNotExist,
		says: []string{"nope.safetensors"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := writeSharded(t)
			path := tc.setup(t, s)
			c, err := Open(context.Background(), path, Options{})
			require.Nil(t, c)
			require.ErrorIs(t, err, tc.is)
			for _, part := range tc.says {
				require.ErrorContains(t, err, part)
			}
		})
	}
}

// TestOpenByContent: a file whose name says nothing (a temporary file, a
// content-addressed blob) opens by what it holds, as the reference
// library opens any file; one that holds no checkpoint stays ErrFormat.
func TestOpenByContent(t *testing.T) {
	dir := t.TempDir()
	blob := filepath.Join(dir, "sha256-0123abcd")
	_, err := SaveSafetensors(context.Background(), blob, []SaveTensor{
		{Name: "w", Dtype: "F32", Shape: []int64{2}, Data: loader.HostMemory(make([]byte, 8))},
	}, map[string]string{"k": "v"}, loader.SaveOptions{})
	require.NoError(t, err)
	var arr bytes.Buffer
	require.NoError(t, npy.Encode(&arr, npy.Array{Descr: "<i4", Shape: []int64{3}, Data: make([]byte, 12)}))
	tmp := filepath.Join(dir, "tmpk3j2x")
	require.NoError(t, os.WriteFile(tmp, arr.Bytes(), 0o644))
	for path, want := range map[string]int64{blob: 8, tmp: 12} {
		c, err := Open(context.Background(), path, Options{})
		require.NoError(t, err, path)
		require.Len(t, c.Files(), 1, path)
		require.Equal(t, want, c.Bytes(), path)
		require.NoError(t, c.Close())
	}
	for name, data := range map[string][]byte{"short": []byte("{}"), "zip": []byte("PK\x03\x04 a torch .bin"), "text": []byte("hello, world\n")} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		_, err := Open(context.Background(), p, Options{})
		require.ErrorIs(t, err, ErrFormat, name)
	}
}
