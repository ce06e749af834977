package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

func writeTensorFile(t *testing.T, name string, encode func(*bytes.Buffer) error) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, encode(&buf))
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

// runInspect runs the inspect command alone (it is not yet wired into the
// root command) and returns stdout, stderr and the exit code main would use.
func runInspectCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := newInspectCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	code := exitCode(err, false, &errb)
	return out.String(), errb.String(), code
}

// inspectJSON runs inspect --json on path and decodes its output into v.
func inspectJSON(t *testing.T, path string, v any) string {
	t.Helper()
	out, stderr, code := runInspectCmd(t, "--json", path)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
	return out
}

func TestInspectSafetensors(t *testing.T) {
	path := writeTensorFile(t, "model.safetensors", func(b *bytes.Buffer) error {
		return safetensors.Encode(b, []safetensors.TensorData{
			{Name: "embed.weight", Dtype: "BF16", Shape: []int64{4, 3}, Data: make([]byte, 24)},
			{Name: "step", Dtype: "I64", Shape: []int64{}, Data: make([]byte, 8)},
		}, map[string]string{"format": "pt"})
	})
	out, stderr, code := runInspectCmd(t, path)
	require.Equal(t, 0, code, stderr)
	for _, part := range []string{"2 tensors", "embed.weight", "BF16", "[4 3]", "24", "step", "I64", "format", "pt"} {
		require.Contains(t, out, part)
	}

	var rep struct {
		Format  string
		Tensors []struct {
			Name, Dtype string
			Shape       json.RawMessage
			Bytes       int64
		}
		Metadata map[string]string
	}
	js := inspectJSON(t, path, &rep)
	require.Equal(t, "safetensors", rep.Format, js)
	require.Len(t, rep.Tensors, 2, js)
	byName := map[string]string{}
	for _, tt := range rep.Tensors {
		var shape bytes.Buffer
		require.NoError(t, json.Compact(&shape, tt.Shape))
		byName[tt.Name] = tt.Dtype + " " + shape.String()
	}
	require.Equal(t, map[string]string{"embed.weight": "BF16 [4,3]", "step": "I64 []"}, byName, js)
	require.Equal(t, map[string]string{"format": "pt"}, rep.Metadata)
}

func TestInspectNPY(t *testing.T) {
	path := writeTensorFile(t, "a.npy", func(b *bytes.Buffer) error {
		return npy.Encode(b, npy.Array{Descr: "<i2", Shape: []int64{5}, Data: make([]byte, 10)})
	})
	var rep struct {
		Format, Dtype string
		Shape         []int64
		Bytes         int64
	}
	inspectJSON(t, path, &rep)
	require.Equal(t, "npy", rep.Format)
	require.Equal(t, "<i2", rep.Dtype)
	require.Equal(t, []int64{5}, rep.Shape)
	require.EqualValues(t, 10, rep.Bytes)
	out, _, code := runInspectCmd(t, path)
	require.Equal(t, 0, code)
	require.Contains(t, out, "npy 1.0")
}

// writeShardedCheckpoint writes two shards and their index; shard a holds
// 2 tensors of 24+4 bytes, shard b one of 6 bytes.
func writeShardedCheckpoint(t *testing.T, weightMap map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	shards := map[string][]safetensors.TensorData{
		"model-a.safetensors": {
			{Name: "w1", Dtype: "F32", Shape: []int64{2, 3}, Data: make([]byte, 24)},
			{Name: "b1", Dtype: "F16", Shape: []int64{2}, Data: make([]byte, 4)},
		},
		"model-b.safetensors": {
			{Name: "w2", Dtype: "U8", Shape: []int64{6}, Data: make([]byte, 6)},
		},
	}
	for name, ts := range shards {
		var buf bytes.Buffer
		require.NoError(t, safetensors.Encode(&buf, ts, nil))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644))
	}
	b, err := json.Marshal(map[string]any{"weight_map": weightMap})
	require.NoError(t, err)
	p := filepath.Join(dir, "model.safetensors.index.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

func TestInspectIndex(t *testing.T) {
	path := writeShardedCheckpoint(t, map[string]string{
		"w1": "model-a.safetensors", "b1": "model-a.safetensors", "w2": "model-b.safetensors",
	})
	var rep struct {
		Format string
		Files  []struct {
			Name    string
			Tensors int
			Bytes   int64
		}
		Tensors int
		Bytes   int64
	}
	js := inspectJSON(t, path, &rep)
	require.Equal(t, "safetensors-index", rep.Format, js)
	require.Len(t, rep.Files, 2, js)
	require.Equal(t, "model-a.safetensors", rep.Files[0].Name)
	require.Equal(t, 2, rep.Files[0].Tensors)
	require.EqualValues(t, 28, rep.Files[0].Bytes)
	require.Equal(t, "model-b.safetensors", rep.Files[1].Name)
	require.Equal(t, 1, rep.Files[1].Tensors)
	require.EqualValues(t, 6, rep.Files[1].Bytes)
	require.Equal(t, 3, rep.Tensors)
	require.EqualValues(t, 34, rep.Bytes)

	out, _, code := runInspectCmd(t, path)
	require.Equal(t, 0, code)
	require.Contains(t, out, "2 shards, 3 tensors, 34 bytes")
	require.Regexp(t, `model-a\.safetensors\s+2\s+28`, out)
	require.Regexp(t, `model-b\.safetensors\s+1\s+6`, out)
}

// tarSamples is a shard of two samples: s0 with jpg (100 bytes) and cls
// (1), s1 with jpg (300), cls (1) and json (20).
func tarSamples(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range []struct {
		name string
		size int
	}{{"s0.jpg", 100}, {"s0.cls", 1}, {"s1.jpg", 300}, {"s1.cls", 1}, {"s1.json", 20}} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "train/" + m.name, Mode: 0o644, Size: int64(m.size), Typeflag: tar.TypeReg}))
		_, err := tw.Write(bytes.Repeat([]byte{'x'}, m.size))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func zstdBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func TestInspectWebDatasetShard(t *testing.T) {
	plain := tarSamples(t)
	for _, tc := range []struct {
		name, compression string
		data              []byte
	}{
		{"shard-000.tar", "none", plain},
		{"shard-000.tar.gz", "gzip", gzipBytes(t, plain)},
		{"shard-000.tgz", "gzip", gzipBytes(t, plain)},
		{"shard-000.tar.zst", "zstd", zstdBytes(t, plain)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			var rep struct {
				Format, Compression string
				FileBytes           int64 `json:"file_bytes"`
				Samples             int
				Extensions          map[string]int
				Bytes               int64
				Min                 int64 `json:"min_sample_bytes"`
				Max                 int64 `json:"max_sample_bytes"`
			}
			js := inspectJSON(t, path, &rep)
			require.Equal(t, "webdataset", rep.Format, js)
			require.Equal(t, tc.compression, rep.Compression, js)
			require.EqualValues(t, len(tc.data), rep.FileBytes, js)
			require.Equal(t, 2, rep.Samples, js)
			require.Equal(t, map[string]int{"jpg": 2, "cls": 2, "json": 1}, rep.Extensions, js)
			require.EqualValues(t, 422, rep.Bytes, js)
			require.EqualValues(t, 101, rep.Min, js)
			require.EqualValues(t, 321, rep.Max, js)

			out, _, code := runInspectCmd(t, path)
			require.Equal(t, 0, code)
			if tc.compression == "none" {
				require.Contains(t, out, "uncompressed")
			} else {
				require.Contains(t, out, tc.compression+" compressed")
			}
			require.Regexp(t, `samples\s+2\n`, out)
			require.Contains(t, out, "min 101, max 321")
			require.Regexp(t, `json\s+1\n`, out)
		})
	}
}

// tarListing describes a shard the way GNU tar lists it: its regular
// members grouped into samples by the WebDataset key rule (path up to the
// first dot of the base name, consecutive members sharing it).
func tarListing(t *testing.T, path string) (samples int, exts map[string]int, total, minSize, maxSize int64) {
	t.Helper()
	out, err := exec.Command(testenv.Tool(t, "tar", "tar (GNU tar)"), "-tvf", path).Output()
	require.NoError(t, err, "GNU tar -tvf %s", path)
	exts = map[string]int{}
	var key string
	var size int64
	flush := func() {
		if key == "" {
			return
		}
		if samples == 0 || size < minSize {
			minSize = size
		}
		maxSize = max(maxSize, size)
		samples++
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// -rw-r--r-- owner/group SIZE YYYY-MM-DD HH:MM NAME
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 6, line)
		if !strings.HasPrefix(f[0], "-") {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err, line)
		name := strings.Join(f[5:], " ")
		dir, base := filepath.Split(name)
		dot := strings.IndexByte(base, '.')
		if dot <= 0 {
			continue
		}
		if k := dir + base[:dot]; k != key {
			flush()
			key, size = k, 0
		}
		size += n
		total += n
		exts[strings.ToLower(base[dot+1:])]++
	}
	flush()
	return samples, exts, total, minSize, maxSize
}

// The WebDataset project's own shards (testdata/webdataset), described as
// GNU tar's listing of them says. A missing fixture fails the test.
func TestInspectWebDatasetFixtures(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "webdataset")
	names, _ := filepath.Glob(filepath.Join(dir, "*.t*"))
	require.Len(t, names, 5, "the five WebDataset fixtures ship in %s", dir)
	for _, p := range names {
		t.Run(filepath.Base(p), func(t *testing.T) {
			samples, exts, total, minSize, maxSize := tarListing(t, p)
			var rep struct {
				Samples    int
				Extensions map[string]int
				Bytes      int64
				Min        int64 `json:"min_sample_bytes"`
				Max        int64 `json:"max_sample_bytes"`
			}
			js := inspectJSON(t, p, &rep)
			require.Positive(t, rep.Samples, js)
			require.Equal(t, samples, rep.Samples, js)
			require.Equal(t, exts, rep.Extensions, js)
			require.Equal(t, total, rep.Bytes, js)
			require.Equal(t, minSize, rep.Min, js)
			require.Equal(t, maxSize, rep.Max, js)
		})
	}
}

func truncated(b []byte) []byte { return b[:len(b)/2] }

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	badIndex := writeShardedCheckpoint(t, map[string]string{
		"w1": "model-b.safetensors", "b1": "model-a.safetensors", "w2": "model-b.safetensors",
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		says []string
	}{
		{"no file", []string{filepath.Join(dir, "nope.safetensors")}, 1, []string{"nope.safetensors", "no such file"}},
		{"directory", []string{t.TempDir()}, 1, []string{"is a directory"}},
		{"unknown type", []string{write("weights.bin", []byte("x"))}, 1, []string{"weights.bin", "unknown file type"}},
		{"truncated safetensors", []string{write("bad.safetensors", []byte("short"))}, 1, []string{"bad.safetensors", "too short"}},
		{"weight_map disagrees", []string{badIndex}, 1, []string{`"w1"`, "model-a.safetensors", "model-b.safetensors", "weight_map"}},
		{"corrupt gzip shard", []string{write("bad.tar.gz", truncated(gzipBytes(t, tarSamples(t))))}, 1, []string{"bad.tar.gz"}},
		{"no arguments", nil, 2, []string{"accepts 1 arg"}},
		{"two files", []string{"a.npy", "b.npy"}, 2, []string{"accepts 1 arg"}},
		{"unknown flag", []string{"--yaml", "a.npy"}, 2, []string{"unknown flag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runInspectCmd(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Empty(t, out)
			for _, part := range tc.says {
				require.True(t, strings.Contains(stderr, part), "stderr lacks %q:\n%s", part, stderr)
			}
		})
	}
}
