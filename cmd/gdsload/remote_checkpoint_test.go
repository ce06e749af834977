package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// Remote checkpoints load, inspect and stage as local ones do (once
// `load rdmafs://.../model.safetensors` failed with "checkpoint: stat
// rdmafs://...: no such file or directory", as did .npy and
// .safetensors.index.json, `inspect` over rdmafs, and staging through an
// index.json).
func TestRemoteCheckpointsFromServerProcess(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "st"), 0o755))
	_, dataSum := writeCheckpoint(t, filepath.Join(root, "st"))
	var np bytes.Buffer
	require.NoError(t, npy.Encode(&np, npy.Array{Descr: "<f4", Shape: []int64{5, 7}, Data: make([]byte, 140)}))
	require.NoError(t, os.WriteFile(filepath.Join(root, "emb.npy"), np.Bytes(), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "sharded"), 0o755))
	weightMap := map[string]string{}
	for i, name := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
		var buf bytes.Buffer
		tname := "layer." + string(rune('0'+i))
		require.NoError(t, safetensors.Encode(&buf, []safetensors.TensorData{{Name: tname, Dtype: "U8", Shape: []int64{4099}, Data: make([]byte, 4099)}}, nil))
		require.NoError(t, os.WriteFile(filepath.Join(root, "sharded", name), buf.Bytes(), 0o644))
		weightMap[tname] = name
	}
	index, err := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "sharded", "model.safetensors.index.json"), index, 0o644))
	addr := startServer(t, root, "s3cret-token-0123456789abcdef")
	t.Setenv("GDSLOAD_TOKEN", "s3cret-token-0123456789abcdef")
	url := "rdmafs://" + addr

	for _, tc := range []struct {
		path    string
		tensors int
	}{
		{"/st/model.safetensors", 3},
		{"/emb.npy", 1},
		{"/sharded/model.safetensors.index.json", 2},
	} {
		out, stderr, code := run(t, "load", "--json", "--checksum", "sha256", url+tc.path)
		require.Equal(t, 0, code, "load %s: %s", tc.path, stderr)
		var res checkpointJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Equal(t, tc.tensors, res.Tensors, tc.path)
		require.Equal(t, url+tc.path, res.Checkpoint)
		if tc.path == "/st/model.safetensors" {
			require.Equal(t, dataSum, res.Files[0].SHA256, "the same data-region digest as locally")
		}

		out, stderr, code = run(t, "inspect", "--json", url+tc.path)
		require.Equal(t, 0, code, "inspect %s: %s", tc.path, stderr)
		require.True(t, strings.Contains(out, `"format"`), out)
	}

	dst := t.TempDir()
	out, stderr, code := run(t, "stage", "--json", url+"/sharded/model.safetensors.index.json", dst)
	require.Equal(t, 0, code, stderr)
	var res stageJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, 3, res.Copied, "the index and both shards")
	for _, name := range []string{"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
		want, err := os.ReadFile(filepath.Join(root, "sharded", name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dst, name))
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}

	_, stderr, code = run(t, "load", url+"/st/missing.safetensors")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "not found")
}

// A bench mode that cannot run is skipped with its reason and the others
// still run (once `--modes gds,...` aborted the whole bench when cuFile
// would not open).
func TestBenchSkipsUnavailableMode(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("mode=nvfs"))
	require.NoError(t, ctl.Do("fault=driver_open"))
	p, _ := writeFile(t, t.TempDir(), "x.bin", 2<<20+1)
	out, stderr, code := run(t, "bench", "--json", "--runs", "1", "--modes", "gds,bounce,cached-bounce", p)
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Results, 2)
	require.Equal(t, "bounce", rep.Results[0].Mode)
	require.Equal(t, "cached-bounce", rep.Results[1].Mode)
	require.Contains(t, rep.Skipped["gds"], "cuFileDriverOpen failed")

	out, stderr, code = run(t, "bench", "--runs", "1", "--modes", "gds,bounce", p)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "skipped gds: gds refused")
}
