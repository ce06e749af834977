package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/internal/realcufile"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

// realRun runs the gdsload binary with env added and returns its standard
// output, standard error and exit code.
func realRun(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(gdsloadBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

type realLoadJSON struct {
	Path    string `json:"path"`
	GDSMode string `json:"gds_mode"`
	Reason  string `json:"reason"`
	Tensors int    `json:"tensors"`
	Files   []struct {
		Name    string `json:"name"`
		Path    string `json:"path"`
		GDSMode string `json:"gds_mode"`
		Reason  string `json:"reason"`
		SHA256  string `json:"sha256"`
	} `json:"files"`
}

// writeShard writes a safetensors file whose tensors have awkward sizes,
// so that data regions start and end off 4 KiB boundaries, and returns
// the SHA-256 of its data region.
func writeShard(t *testing.T, path string, seed byte, names ...string) string {
	t.Helper()
	var ts []safetensors.TensorData
	for i, n := range names {
		size := 4097*(i+1) + int(seed)
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(j)*13 + seed + byte(i)
		}
		ts = append(ts, safetensors.TensorData{Name: n, Dtype: "U8", Shape: []int64{int64(size)}, Data: b})
	}
	var buf bytes.Buffer
	require.NoError(t, safetensors.Encode(&buf, ts, map[string]string{"format": "pt"}))
	file := buf.Bytes()
	h, err := safetensors.ParseHeader(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, file, 0o644))
	sum := sha256.Sum256(file[h.DataOffset:])
	return hex.EncodeToString(sum[:])
}

// The gds route run against NVIDIA's real libcufile (Debian's cuFile 1.4
// and PyPI's cuFile 1.14, each in its own process) over the CUDA test
// double's driver, on an ext4 loop mount that udev knows: loads of awkward
// sizes, safetensors and sharded checkpoints, bench --modes gds and doctor
// take cuFile's compat mode and land the bytes exactly; a file on tmpfs,
// where cuFile's handle registration fails, falls back to bounce with the
// reason named.
func TestRealCuFileCLI(t *testing.T) {
	h, libs := realcufile.Use(t)
	dir := filepath.Join(h.Dir, "cli")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	sizes := map[string]int{"zero": 0, "one": 1, "a4095": 4095, "a4097": 4097, "big": 64<<20 + 3}
	want := map[string]string{}
	var paths []string
	for name, n := range sizes {
		p, sum := writeFile(t, dir, name, n)
		want[p] = sum
		paths = append(paths, p)
	}
	single := filepath.Join(dir, "model.safetensors")
	singleSum := writeShard(t, single, 1, "w", "b", "scale")
	shards := filepath.Join(dir, "sharded")
	require.NoError(t, os.MkdirAll(shards, 0o755))
	shardSums := map[string]string{
		filepath.Join(shards, "model-00001-of-00002.safetensors"): writeShard(t, filepath.Join(shards, "model-00001-of-00002.safetensors"), 3, "l0.w", "l0.b"),
		filepath.Join(shards, "model-00002-of-00002.safetensors"): writeShard(t, filepath.Join(shards, "model-00002-of-00002.safetensors"), 5, "l1.w"),
	}
	index, err := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": map[string]string{
		"l0.w": "model-00001-of-00002.safetensors", "l0.b": "model-00001-of-00002.safetensors", "l1.w": "model-00002-of-00002.safetensors",
	}})
	require.NoError(t, err)
	indexPath := filepath.Join(shards, "model.safetensors.index.json")
	require.NoError(t, os.WriteFile(indexPath, index, 0o644))
	onTmpfs, tmpfsSum := writeFile(t, h.Tmpfs, "on-tmpfs.bin", 1<<20+5)

	for _, lib := range libs {
		t.Run(lib.Name, func(t *testing.T) {
			env := h.Env(lib)
			require.NoError(t, os.RemoveAll(h.LogFile))
			gds := func(t *testing.T, args ...string) realLoadJSON {
				t.Helper()
				out, stderr, code := realRun(t, env, append([]string{"load", "--to", "gpu:0", "--path", "gds", "--direct", "on", "--checksum", "sha256", "--json"}, args...)...)
				require.Equal(t, 0, code, stderr)
				var res realLoadJSON
				require.NoError(t, json.Unmarshal([]byte(out), &res), out)
				require.Equal(t, "gds", res.Path, res.Reason)
				require.Equal(t, "compat", res.GDSMode)
				return res
			}

			t.Run("awkward sizes", func(t *testing.T) {
				res := gds(t, append([]string{"--chunk-size", "1M"}, paths...)...)
				require.Len(t, res.Files, len(want))
				for _, f := range res.Files {
					require.Equal(t, want[f.Name], f.SHA256, "%s: the bytes that landed in device memory", f.Name)
					if sizes[filepath.Base(f.Name)] > 0 {
						require.Equal(t, "gds", f.Path, "%s: %s", f.Name, f.Reason)
					}
				}
				log, err := os.ReadFile(h.LogFile)
				require.NoError(t, err, "libcufile's log at CUFILE_LOGFILE_PATH")
				require.Contains(t, string(log), "cuFileHandleRegister")
			})

			t.Run("safetensors", func(t *testing.T) {
				res := gds(t, "--chunk-size", "64K", single)
				require.Equal(t, 3, res.Tensors)
				require.Len(t, res.Files, 1)
				require.Equal(t, singleSum, res.Files[0].SHA256)
			})

			t.Run("sharded checkpoint", func(t *testing.T) {
				res := gds(t, "--chunk-size", "64K", indexPath)
				require.Equal(t, 3, res.Tensors)
				require.Len(t, res.Files, 2)
				for _, f := range res.Files {
					require.Equal(t, shardSums[f.Name], f.SHA256, f.Name)
				}
			})

			t.Run("tmpfs falls back to bounce", func(t *testing.T) {
				out, stderr, code := realRun(t, env, "load", "--to", "gpu:0", "--path", "gds", "--direct", "on", "--checksum", "sha256", "--json", onTmpfs)
				require.Equal(t, 0, code, stderr)
				var res realLoadJSON
				require.NoError(t, json.Unmarshal([]byte(out), &res), out)
				require.Len(t, res.Files, 1)
				require.Equal(t, tmpfsSum, res.Files[0].SHA256)
				require.Equal(t, "bounce", res.Files[0].Path)
				require.Contains(t, res.Files[0].Reason, "cuFileHandleRegister", "the fallback says why")
			})

			t.Run("bench --modes gds", func(t *testing.T) {
				big := filepath.Join(dir, "big")
				out, stderr, code := realRun(t, env, "bench", "--json", "--runs", "1", "--modes", "gds", big)
				require.Equal(t, 0, code, stderr)
				var rep benchReport
				require.NoError(t, json.Unmarshal([]byte(out), &rep))
				require.Len(t, rep.Results, 1)
				require.Equal(t, "gds", rep.Results[0].Mode)
				require.Equal(t, "compat", rep.Results[0].GDSMode)
				require.Greater(t, rep.Results[0].GiBPerS, 0.0)
			})

			t.Run("doctor", func(t *testing.T) {
				out, stderr, code := realRun(t, env, "doctor", "--json", dir)
				require.Equal(t, 0, code, stderr)
				var rep struct {
					Libraries []struct {
						Name, Path string
						Found      bool
					} `json:"libraries"`
					GDSMode string `json:"gds_mode"`
				}
				require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
				require.Equal(t, "compat", rep.GDSMode)
				require.Equal(t, "libcufile.so.0", rep.Libraries[0].Name)
				require.True(t, rep.Libraries[0].Found)
				require.Equal(t, lib.Path, rep.Libraries[0].Path)
			})
		})
	}
}
