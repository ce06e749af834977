package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/shards/safetensors"
)

// writeCheckpoint writes a safetensors file with an unaligned data region
// and returns its path and the sha256 of that data region.
func writeCheckpoint(t *testing.T, dir string) (string, string) {
	t.Helper()
	mk := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i)*31 + seed
		}
		return b
	}
	var buf bytes.Buffer
	require.NoError(t, safetensors.Encode(&buf, []safetensors.TensorData{
		{Name: "w1", Dtype: "F32", Shape: []int64{300, 1001}, Data: mk(300*1001*4, 1)},
		{Name: "b1", Dtype: "BF16", Shape: []int64{7}, Data: mk(14, 2)},
		{Name: "scale", Dtype: "F64", Shape: []int64{}, Data: mk(8, 3)},
	}, map[string]string{"format": "pt"}))
	file := buf.Bytes()
	h, err := safetensors.ParseHeader(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	p := filepath.Join(dir, "model.safetensors")
	require.NoError(t, os.WriteFile(p, file, 0o644))
	sum := sha256.Sum256(file[h.DataOffset:])
	return p, hex.EncodeToString(sum[:])
}

type checkpointJSON struct {
	loadJSON
	Checkpoint string `json:"checkpoint"`
	Tensors    int    `json:"tensors"`
}

func TestLoadCheckpointDigestCoversDataRegion(t *testing.T) {
	p, want := writeCheckpoint(t, t.TempDir())
	for _, direct := range []string{"on", "off"} {
		out, stderr, code := run(t, "load", "--direct", direct, "--checksum", "sha256", "--json", "--chunk-size", "256K", p)
		require.Equal(t, 0, code, stderr)
		var res checkpointJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Equal(t, 3, res.Tensors)
		require.Equal(t, "host", res.Path)
		require.Len(t, res.Files, 1)
		require.Equal(t, want, res.Files[0].SHA256, "direct=%s", direct)
	}
	// --format raw loads the whole file, header included.
	out, _, code := run(t, "load", "--format", "raw", "--checksum", "sha256", "--json", p)
	require.Equal(t, 0, code)
	var raw loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	require.NotEqual(t, want, raw.Files[0].SHA256)
}

func TestLoadCheckpointToGPUThroughTestDouble(t *testing.T) {
	ctl := useFakeCUDA(t)
	p, want := writeCheckpoint(t, t.TempDir())
	for _, mode := range []string{"nvfs", "compat"} {
		require.NoError(t, ctl.Do("reset"))
		require.NoError(t, ctl.Do("mode="+mode))
		out, stderr, code := run(t, "load", "--to", "gpu:0", "--checksum", "sha256", "--json", "--chunk-size", "256K", p)
		require.Equal(t, 0, code, stderr)
		var res checkpointJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.Equal(t, map[string]string{"nvfs": "gds", "compat": "bounce"}[mode], res.Path)
		require.Equal(t, want, res.Files[0].SHA256, "bytes copied back from the GPU (%s)", mode)
		for _, c := range []string{"allocs", "pinned", "handles", "driver_refs"} {
			require.Zero(t, ctl.Counter(c), "%s released", c)
		}
	}
}

func TestLoadCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.safetensors")
	require.NoError(t, os.WriteFile(bad, []byte("\xff\xff\xff\xff\xff\xff\xff\xff{}"), 0o644))
	p, _ := writeCheckpoint(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"invalid header", []string{"load", bad}, 1, "bad.safetensors"},
		{"two checkpoints", []string{"load", "--format", "checkpoint", p, p}, 2, "one PATH"},
		{"bad format", []string{"load", "--format", "tar", p}, 2, "--format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.msg)
		})
	}
}
