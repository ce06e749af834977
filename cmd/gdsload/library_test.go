package main_test

// Each CLI verb's job, done by a Go program through exported API only,
// against a real `gdsload serve` process: what a pipeline author writes
// without copying anything from package main.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/clitest"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/inspect"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/stage"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
)

// gdsload builds the real binary once; a failed build fails the test with
// the compiler's output.
func gdsload(t *testing.T) string { return clitest.Binary(t, ".") }

// serveProcess runs `gdsload serve` on root and returns its rdmafs:// URL
// prefix; the server must drain and exit 0 on SIGTERM at cleanup.
func serveProcess(t *testing.T, root string, token []byte) string {
	t.Helper()
	addr, _ := clitest.Serve(t, gdsload(t), root, token)
	return "rdmafs://" + addr
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeShard writes a WebDataset shard of n samples "s<shard>-<i>" with
// .txt (the key) and .cls fields.
func writeShard(t *testing.T, path string, shard, n int) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		key := fmt.Sprintf("s%d-%03d", shard, i)
		for ext, data := range map[string]string{"txt": key, "cls": fmt.Sprint(i % 7)} {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: key + "." + ext, Mode: 0o644, Size: int64(len(data))}))
			_, err := tw.Write([]byte(data))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func TestLibraryAgainstServeProcess(t *testing.T) {
	root := t.TempDir()
	token := []byte("library-test-token-0123456789abcdef")
	files := map[string][]byte{}
	for name, n := range map[string]int{"bin/big.bin": 9<<20 + 4097, "bin/one": 1, "bin/empty": 0, "bin/sub/odd.bin": 12345} {
		b := bytes.Repeat([]byte(name), n/len(name)+1)[:n]
		files[name] = b
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), b, 0o644))
	}
	for s, n := range []int{7, 5, 9, 4} {
		writeShard(t, filepath.Join(root, "data", fmt.Sprintf("shard-%02d.tar", s)), s, n)
	}
	var st bytes.Buffer
	tensors := []safetensors.TensorData{
		{Name: "embed.weight", Dtype: "F32", Shape: []int64{3, 5}, Data: bytes.Repeat([]byte{1, 2, 3, 4}, 15)},
		{Name: "head.bias", Dtype: "BF16", Shape: []int64{7}, Data: bytes.Repeat([]byte{9, 8}, 7)},
	}
	require.NoError(t, safetensors.Encode(&st, tensors, map[string]string{"format": "pt"}))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "ckpt"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "ckpt", "model.safetensors"), st.Bytes(), 0o644))

	server := serveProcess(t, root, token)
	ctx := context.Background()
	m, err := vfs.New(rdmafsfs.With(rdmafs.WithToken(token), rdmafs.WithConnections(3)))
	require.NoError(t, err)
	defer m.Close()

	t.Run("load into host memory, byte-exact", func(t *testing.T) {
		f, err := m.Open(ctx, server+"/bin/big.bin")
		require.NoError(t, err)
		defer f.Close()
		buf := make([]byte, f.Size())
		res, err := loader.Load(ctx, []loader.Job{loader.WholeFile(f, loader.NewHostBuffer(buf))}, loader.Options{ChunkSize: 1 << 20})
		require.NoError(t, err)
		require.Equal(t, files["bin/big.bin"], buf)
		require.Equal(t, loader.RouteHost, res.Route)

		// A directory, through a host target, checked by digest.
		dst, err := loader.OpenTarget(loader.Target{Kind: loader.TargetHost}, loader.WithWorkers(4))
		require.NoError(t, err)
		defer dst.Close()
		all, err := m.OpenAll(ctx, []string{server + "/bin/"})
		require.NoError(t, err)
		defer all.Close()
		res, err = dst.Load(ctx, all.Sources(), loader.Options{Checksum: loader.ChecksumSHA256})
		require.NoError(t, err)
		require.Len(t, res.Files, len(files))
		for _, fr := range res.Files {
			name := strings.TrimPrefix(fr.Name, server+"/")
			require.Equal(t, sum(files[name]), fr.SHA256, name)
		}
	})

	t.Run("iterate at world size 2, and resume", func(t *testing.T) {
		ds, err := iterator.Open(ctx, server+"/data/", iterator.WithFS(m))
		require.NoError(t, err)
		defer ds.Close()
		local, err := iterator.Open(ctx, filepath.Join(root, "data"))
		require.NoError(t, err)
		require.Equal(t, local.Fingerprint(), ds.Fingerprint(), "the same shards, so the same order")
		opts := iterator.Options{WorldSize: 2, Seed: 11, Shuffle: true, DropRemainder: true, Workers: 2}
		seen := map[string]int{}
		var states [2]iterator.State
		for rank := range 2 {
			o := opts
			o.Rank = rank
			it, err := iterator.New(ds, o)
			require.NoError(t, err)
			n := 0
			for s, err := range it.All(ctx) {
				require.NoError(t, err)
				txt, ok := s.Get("txt")
				require.True(t, ok)
				require.Equal(t, s.Key, string(txt))
				seen[s.Key]++
				if n++; n == 4 {
					break
				}
			}
			states[rank] = it.State()
			require.NoError(t, it.Close())
		}
		require.Equal(t, states[0], states[1], "the ranks agree on the position")
		for rank := range 2 {
			o := opts
			o.Rank = rank
			it, err := iterator.New(ds, o)
			require.NoError(t, err)
			require.NoError(t, it.Restore(states[rank]))
			for s, err := range it.All(ctx) {
				require.NoError(t, err)
				seen[s.Key]++
			}
			require.NoError(t, it.Close())
		}
		require.Len(t, seen, 24, "25 samples, the odd one dropped")
		for k, n := range seen {
			require.Equal(t, 1, n, "sample %s", k)
		}
	})

	t.Run("stage to local disk", func(t *testing.T) {
		entries, err := stage.Expand(ctx, []string{server + "/bin/"}, stage.Options{FS: m})
		require.NoError(t, err)
		dest := filepath.Join(t.TempDir(), "nvme")
		s, err := stage.Open(dest, stage.Options{FS: m})
		require.NoError(t, err)
		plan, err := s.Plan(ctx, entries)
		require.NoError(t, err)
		res, err := s.Run(ctx, plan)
		require.NoError(t, s.Close())
		require.NoError(t, err)
		require.Equal(t, len(files), res.Copied)
		for name, want := range files {
			got, err := os.ReadFile(filepath.Join(dest, strings.TrimPrefix(name, "bin/")))
			require.NoError(t, err)
			require.Equal(t, want, got, name)
		}
	})

	t.Run("inspect a remote safetensors header", func(t *testing.T) {
		rep, err := inspect.File(ctx, server+"/ckpt/model.safetensors", inspect.Options{FS: m})
		require.NoError(t, err)
		st := rep.(*inspect.Safetensors)
		require.Len(t, st.Tensors, 2)
		require.Equal(t, "pt", st.Metadata["format"])
		ck, err := checkpoint.Open(ctx, server+"/ckpt/model.safetensors", checkpoint.Options{FS: m})
		require.NoError(t, err)
		defer ck.Close()
		l, err := ck.Load(ctx, checkpoint.HostAllocator, loader.Options{})
		require.NoError(t, err)
		defer l.Close()
		w, err := checkpoint.View[float32](l, "embed.weight")
		require.NoError(t, err)
		require.Len(t, w, 15)
		require.Equal(t, tensors[1].Data, l.Bytes("head.bias"))
	})

	t.Run("a missing path matches fs.ErrNotExist", func(t *testing.T) {
		for _, p := range []string{filepath.Join(root, "absent"), server + "/absent"} {
			_, err := m.Open(ctx, p)
			require.True(t, errors.Is(err, fs.ErrNotExist), "Open %s: %v", p, err)
			_, err = iterator.Open(ctx, p, iterator.WithFS(m))
			require.True(t, errors.Is(err, fs.ErrNotExist), "iterator.Open %s: %v", p, err)
		}
	})
}
