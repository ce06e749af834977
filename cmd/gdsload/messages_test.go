package main

// What the commands say: verbosity flags, summaries in English singular
// and plural, help, and hints where a request cannot be met.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/shards/safetensors"
)

func TestVerbosityFlags(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 5000)
	shards := writeShards(t, 3)

	for _, args := range [][]string{{"-q", "load", p}, {"load", "-q", p}, {"--quiet", "load", p}, {"--log-level", "error", "load", p}} {
		out, stderr, code := run(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		require.Contains(t, out, "loaded", "%v: the result on stdout stays", args)
		require.Empty(t, stderr, "%v", args)
	}

	loud, stderr, code := run(t, "iterate", "--json", shards)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "iterate: rank 0/1: 3 samples")
	quiet, stderr, code := run(t, "-q", "iterate", "--json", shards)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	loudKeys, _ := parseLines(t, loud)
	quietKeys, _ := parseLines(t, quiet)
	require.Equal(t, loudKeys, quietKeys, "--json is the same under -q")

	_, stderr, code = run(t, "-v", "load", "--direct", "off", p)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "level=DEBUG msg=loaded file="+p)
	require.Contains(t, stderr, "reason=")
	_, stderr, code = run(t, "--log-level", "debug", "iterate", shards)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "msg=dataset")

	for _, args := range [][]string{{"-q", "-v", "load", p}, {"--log-level", "loud", "load", p}, {"-q", "--log-level", "info", "load", p}} {
		_, stderr, code := run(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
	}
}

// Summaries count in the singular and plural as English does; the
// --world-size help names its default once.
func TestSummariesAndHelp(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "x.bin", 5000)
	out, stderr, code := run(t, "load", p)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "in 1 file\n")
	require.Contains(t, out, "(1 chunk)")

	dst := t.TempDir()
	out, stderr, code = run(t, "stage", p, dst)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "in 1 file to")
	require.Contains(t, out, "copied     1 file,")
	require.Contains(t, out, "skipped    0 files")

	shards := writeShards(t, 1)
	_, stderr, code = run(t, "manifest", shards)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, ": 1 shard, 1 sample, ")
	_, stderr, code = run(t, "iterate", shards)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, ": 1 sample, ")

	var one bytes.Buffer
	require.NoError(t, safetensors.Encode(&one, []safetensors.TensorData{{Name: "w", Dtype: "U8", Shape: []int64{1}, Data: []byte{7}}}, nil))
	st := filepath.Join(t.TempDir(), "one.safetensors")
	require.NoError(t, os.WriteFile(st, one.Bytes(), 0o644))
	out, stderr, code = run(t, "inspect", st)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "safetensors, 1 tensor, 1 data byte at offset")

	out, _, code = run(t, "iterate", "--help")
	require.Equal(t, 0, code)
	found := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--world-size") {
			found = true
			require.Contains(t, l, "(default $WORLD_SIZE or 1)")
			require.NotContains(t, l, "(default 1)", "the default named twice")
		}
	}
	require.True(t, found, out)
}

// Staging into a GPU on a machine without one suggests what stage can do,
// not load's --to host.
func TestStageToGPUWithoutGPUHint(t *testing.T) {
	ctl := useFakeCUDA(t)
	require.NoError(t, ctl.Do("devices=0"))
	p, _ := writeFile(t, t.TempDir(), "x.bin", 5000)
	_, stderr, code := run(t, "stage", p, "gpu:0")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "no GPU")
	require.Contains(t, stderr, "stage into a directory instead")
	require.NotContains(t, stderr, "--to")
}
