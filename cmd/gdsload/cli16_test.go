package main

// CLI reproductions of issue 16's bugs 3, 4 and 9 and of its rough edges
// that belong to the command line.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/stage"
)

// corruptLastShard writes a manifest for dir, then changes a byte in the
// middle of shard-2.tar (same size), so that an iteration fails when it
// reaches that shard, after yielding others.
func corruptLastShard(t *testing.T, dir string) {
	t.Helper()
	_, stderr, code := run(t, "manifest", dir)
	require.Equal(t, 0, code, stderr)
	p := filepath.Join(dir, "shard-2.tar")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

// Bug 3: --state-out is checked before any shard is read, and every way
// out flushes the JSON lines already written, each one whole.
func TestIterateStateOutCheckedFirst(t *testing.T) {
	dir := writeShards(t, 7, 5, 9)
	corruptLastShard(t, dir) // reading the dataset fails
	tmp := t.TempDir()
	for _, tc := range []struct{ name, path, msg string }{
		{"missing directory", filepath.Join(tmp, "nonexistent", "x.json"), "nonexistent"},
		{"a directory", tmp, "is a directory"},
		{"parent is a file", filepath.Join(dir, "shard-0.tar", "x.json"), "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := run(t, "iterate", "--json", "--shuffle=false", "--state-out", tc.path, dir)
			require.Equal(t, 1, code, stderr)
			require.Contains(t, stderr, "--state-out")
			require.Contains(t, stderr, tc.msg)
			require.NotContains(t, stderr, "iterating", "nothing was read")
			require.Empty(t, out)
		})
	}
	// An iteration that fails mid-way still writes its state and every
	// sample line before the failure, each one whole.
	state := filepath.Join(tmp, "state.json")
	out, stderr, code := run(t, "iterate", "--json", "--shuffle=false", "--state-out", state, dir)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "shard-2.tar")
	require.True(t, strings.HasSuffix(out, "\n"), "the last line is whole")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Equal(t, 12, len(lines), "the samples of shard-0 and shard-1:\n%s", out)
	for _, l := range lines {
		var m sampleLine
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
	}
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	require.Contains(t, string(b), `"consumed": 12`)
}

// Bug 4: a state saved at the end of the run and flags that contradict the
// state's order are usage errors, said before any shard is read; flags left
// out take the state's values, as -v says.
func TestIterateResumeRefusals(t *testing.T) {
	dir := writeShards(t, 7, 5, 9) // 21 samples
	tmp := t.TempDir()
	end := filepath.Join(tmp, "end.json")
	_, stderr, code := run(t, "iterate", "--epochs", "3", "--seed", "1", "--state-out", end, dir)
	require.Equal(t, 0, code, stderr)

	out, stderr, code := run(t, "iterate", "--epochs", "3", "--json", "--resume", end, dir)
	require.Equal(t, 2, code, "a finished state yields nothing: %s", stderr)
	require.Contains(t, stderr, "end of the run")
	require.Contains(t, stderr, "--epochs")
	require.Empty(t, out)

	out, stderr, code = run(t, "iterate", "--epochs", "4", "--json", "--resume", end, dir)
	require.Equal(t, 0, code, stderr)
	keys, summary := parseLines(t, out)
	require.Len(t, keys, 21, "a fourth epoch")
	require.EqualValues(t, 4, summary["state"].(map[string]any)["epoch"])

	mid := filepath.Join(tmp, "mid.json")
	_, stderr, code = run(t, "iterate", "--seed", "1", "--limit", "5", "--state-out", mid, dir)
	require.Equal(t, 0, code, stderr)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--seed", "2"}, 2, "--seed 2 differs from the state's 1"},
		{[]string{"--seed", "2", "--shuffle=false"}, 2, "--shuffle false differs from the state's true"},
		{[]string{"--partitions", "3"}, 2, "--partitions 3 differs from the state's 1"},
		{[]string{"--seed", "1"}, 0, ""},
		{[]string{"-v"}, 0, "flag=--seed state=1"},
		{nil, 0, ""},
	} {
		args := append(append([]string{"iterate", "--json", "--resume", mid}, tc.args...), dir)
		out, stderr, code := run(t, args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		require.Contains(t, stderr, tc.msg, "%v", tc.args)
		if code == 0 {
			keys, _ := parseLines(t, out)
			require.Len(t, keys, 16, "%v: the rest of the epoch", tc.args)
		}
	}
}

// Bug 9 and the escaping rough edge: load --checksum writes whole files'
// digests as sha256sum does, names escaped, so sha256sum -c checks them;
// a checkpoint's digest covers its data region and is labelled with it.
func TestLoadChecksumLines(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"plain.bin", "new\nline.bin", `back\slash.bin`} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{byte(i)}, 5000+i), 0o644))
	}
	out, stderr, code := run(t, "load", "--checksum", "sha256", dir)
	require.Equal(t, 0, code, stderr)
	sums := out[strings.Index(out, "\n\n")+2:]
	require.Contains(t, sums, "new\\nline.bin\n")
	require.Contains(t, sums, `back\\slash.bin`)
	for _, l := range strings.Split(strings.TrimSuffix(sums, "\n"), "\n") {
		require.Equal(t, strings.Contains(l, `\`), strings.HasPrefix(l, `\`), "an escaped line begins with a backslash: %q", l)
	}
	sha256sumCheck(t, sums, 3)

	ck, region := writeCheckpoint(t, dir)
	file := mustRead(t, ck)
	h, err := safetensors.ParseHeader(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	out, stderr, code = run(t, "load", "--checksum", "sha256", ck)
	require.Equal(t, 0, code, stderr)
	line := out[strings.Index(out, "\n\n")+2:]
	require.True(t, strings.HasPrefix(line, "sha256 of bytes ["), "a data-region digest is labelled: %q", line)
	require.Contains(t, line, region+"  "+ck+"\n")
	require.Contains(t, line, "bytes ["+strconv.FormatInt(h.DataOffset, 10)+", "+strconv.FormatInt(h.DataOffset+h.DataLen, 10)+")")
	sha256sumCheck(t, line, 0)

	out, stderr, code = run(t, "load", "--checksum", "sha256", "--json", ck)
	require.Equal(t, 0, code, stderr)
	var res struct {
		Files []struct {
			Offset  int64 `json:"offset"`
			Partial bool  `json:"partial"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.True(t, res.Files[0].Partial)
	require.Equal(t, h.DataOffset, res.Files[0].Offset)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// sha256sumCheck runs GNU sha256sum -c on sums: want lines must pass, or,
// with want 0, the lines must be refused as unreadable, never reported
// FAILED.
func sha256sumCheck(t *testing.T, sums string, want int) {
	t.Helper()
	if v, err := exec.Command(testenv.Tool(t, "sha256sum", "coreutils"), "--version").Output(); err != nil || !strings.Contains(string(v), "GNU coreutils") {
		testenv.Missing(t, "no GNU sha256sum here (%v): install coreutils", err)
	}
	cmd := exec.Command("sha256sum", "-c", "-")
	cmd.Stdin = strings.NewReader(sums)
	out, err := cmd.CombinedOutput()
	if want > 0 {
		require.NoError(t, err, "sha256sum -c:\n%s\nof\n%s", out, sums)
		require.Equal(t, want, strings.Count(string(out), ": OK"), string(out))
		return
	}
	require.Error(t, err, string(out))
	require.NotContains(t, string(out), "FAILED")
	require.Contains(t, string(out), "no properly formatted")
}

// Loading a staged directory leaves out the stage's sidecar folder, unless
// it is named itself.
func TestLoadSkipsStageSidecar(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src, "a.bin", 3000)
	writeFile(t, src, "sub/b.bin", 5000)
	dst := filepath.Join(t.TempDir(), "staged")
	_, stderr, code := run(t, "stage", src+"/", dst)
	require.Equal(t, 0, code, stderr)
	side, err := os.ReadDir(filepath.Join(dst, stage.SidecarName))
	require.NoError(t, err)
	require.NotEmpty(t, side, "the stage wrote its journal")

	out, stderr, code := run(t, "load", "--json", dst)
	require.Equal(t, 0, code, stderr)
	var res loadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Files, 2, "%+v", res.Files)
	require.EqualValues(t, 8000, res.Bytes)

	_, stderr, code = run(t, "load", filepath.Join(dst, stage.SidecarName))
	require.Equal(t, 0, code, "the sidecar named itself loads: %s", stderr)
}

// -q/--quiet, -v/--verbose and --log-level are global: quiet leaves out
// progress and summaries on stderr but never stdout, verbose adds the
// library's reasons.
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
