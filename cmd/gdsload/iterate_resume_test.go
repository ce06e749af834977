package main

// Iterating with saved state: --state-out is checked before any shard is
// read and written whole on every way out, and a resume refuses a state
// that cannot apply.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

// --state-out is checked before any shard is read, and every way
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

// A state saved at the end of the run and flags that contradict the
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
