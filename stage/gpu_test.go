package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/fakecuda"
	"github.com/gdsload/gdsload/internal/rdmafstest"
	"github.com/gdsload/gdsload/loader"
)

// ToGPU loads local and remote entries into GPU memory (the CUDA test
// double), checks their digests, as read back, against the manifest, and
// frees everything; a manifest that disagrees names the file.
func TestToGPUThroughTestDouble(t *testing.T) {
	s := fakecuda.Use(t, "mode=nvfs")
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
	src := t.TempDir()
	var shards []string
	for i, n := range []int{4097, 2<<20 + 1, 10} {
		name := fmt.Sprintf("shard-%d.tar", i)
		writeFile(t, src, name, n, uint64(i))
		shards = append(shards, fmt.Sprintf(`{"name":%q,"bytes":%d,"samples":1,"sha256":%q}`, name, n, fileSHA(t, filepath.Join(src, name))))
	}
	manifest := fmt.Sprintf(`{"format":"webdataset","version":1,"shards":[%s,%s,%s]}`, shards[0], shards[1], shards[2])
	require.NoError(t, os.WriteFile(filepath.Join(src, "index.json"), []byte(manifest), 0o644))
	remote := rdmafstest.Serve(t, src)
	m := remoteFS(t)
	ctx := context.Background()
	for _, base := range []string{src, remote + "/"} {
		entries, err := Expand(ctx, []string{base}, Options{FS: m})
		require.NoError(t, err)
		res, err := ToGPU(ctx, entries, loader.Target{Kind: loader.TargetGPU}, Options{FS: m, ChunkSize: 1 << 20, Workers: 3})
		require.NoError(t, err, base)
		require.Equal(t, "gpu:0", res.Dest)
		require.Equal(t, 4, res.Files)
		for _, e := range res.Entries {
			require.Equal(t, fileSHA(t, filepath.Join(src, e.Name)), e.Digest, e.Name)
			if e.Name != "index.json" {
				require.NotEmpty(t, e.Manifest, "checked against the manifest: %s", e.Name)
			}
		}
		for _, c := range []string{"allocs", "pinned", "handles", "driver_refs"} {
			require.Zero(t, s.Counter(c), "%s released", c)
		}
	}
	bad := filepath.Join(src, "shard-1.tar")
	require.NoError(t, os.WriteFile(bad, make([]byte, 2<<20+1), 0o644))
	entries, err := Expand(ctx, []string{src}, Options{FS: m})
	require.NoError(t, err)
	_, err = ToGPU(ctx, entries, loader.Target{Kind: loader.TargetGPU}, Options{FS: m})
	require.ErrorContains(t, err, "shard-1.tar")
	require.ErrorContains(t, err, "manifest")

	require.NoError(t, s.Do("devices=0"))
	_, err = ToGPU(ctx, entries[:1], loader.Target{Kind: loader.TargetGPU}, Options{FS: m})
	require.ErrorContains(t, err, "no GPU")
}

// Staging onto several GPUs places the files balanced by bytes, loads
// every GPU at once, checks each file's digest as it landed, in entry
// order, and frees every GPU's memory.
func TestToSeveralGPUs(t *testing.T) {
	s := fakecuda.Use(t, "devices=3")
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
	src := t.TempDir()
	for i, n := range []int{3 << 20, 4097, 2<<20 + 1, 10, 1 << 20} {
		writeFile(t, src, fmt.Sprintf("f%d.bin", i), n, uint64(i))
	}
	ctx := context.Background()
	entries, err := Expand(ctx, []string{src}, Options{})
	require.NoError(t, err)
	res, err := ToGPU(ctx, entries, loader.Target{Kind: loader.TargetGPU, AllDevices: true}, Options{ChunkSize: 1 << 20, Workers: 2, Checksum: loader.ChecksumSHA256})
	require.NoError(t, err)
	require.Equal(t, "gpu:all", res.Dest)
	require.Len(t, res.Entries, 5)
	for _, e := range res.Entries {
		require.Equal(t, fileSHA(t, filepath.Join(src, e.Name)), e.Digest, e.Name)
	}
	require.Contains(t, res.Reason, "gpu:2: ")
	for _, c := range []string{"allocs", "pinned", "handles", "driver_refs"} {
		require.Zero(t, s.Counter(c), "%s released", c)
	}
}
