package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// writeShards writes shards of n samples each ("k<s>-<i>.txt") into a new
// directory.
func writeShards(t *testing.T, counts ...int) string {
	t.Helper()
	dir := t.TempDir()
	for s, n := range counts {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i := range n {
			data := []byte(strings.Repeat("x", 10+i))
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("k%d-%02d.txt", s, i), Mode: 0o644, Size: int64(len(data))})
			tw.Write(data)
		}
		tw.Close()
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shard-%d.tar", s)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func execCmd(t *testing.T, cmd *cobra.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// parseLines splits --json output into sample keys and the summary.
func parseLines(t *testing.T, stdout string) ([]string, map[string]any) {
	t.Helper()
	var keys []string
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if k, ok := m["key"].(string); ok {
			if summary != nil {
				t.Fatalf("sample line %q after the summary", line)
			}
			if _, ok := m["shard"].(string); !ok {
				t.Fatalf("sample line %q has no shard", line)
			}
			keys = append(keys, k)
			continue
		}
		summary = m
	}
	if summary == nil {
		t.Fatal("no summary line")
	}
	return keys, summary
}

func TestIterateJSONAndResume(t *testing.T) {
	dir := writeShards(t, 7, 5, 9) // 21 samples
	out, stderr, err := execCmd(t, newIterateCmd(), dir, "--seed", "3", "--shuffle-buffer", "1KiB", "--json")
	if err != nil {
		t.Fatal(err)
	}
	all, summary := parseLines(t, out)
	if len(all) != 21 || summary["samples"].(float64) != 21 {
		t.Fatalf("%d sample lines, summary %v; want 21", len(all), summary)
	}
	if !strings.Contains(stderr, "samples/s") || !strings.Contains(stderr, "MB/s") {
		t.Fatalf("stderr %q lacks throughput", stderr)
	}
	// Two ranks stop after 4 samples each, then three ranks finish.
	state := filepath.Join(t.TempDir(), "state.json")
	var got []string
	var first [][]string
	for r := range 2 {
		out, _, err := execCmd(t, newIterateCmd(), dir, "--seed", "3", "--shuffle-buffer", "1KiB", "--json",
			"--rank", fmt.Sprint(r), "--world-size", "2", "--partitions", "1", "--limit", "4", "--state-out", state)
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := parseLines(t, out)
		first = append(first, keys)
	}
	for k := range 4 {
		got = append(got, first[0][k], first[1][k])
	}
	var second [][]string
	for r := range 3 {
		out, _, err := execCmd(t, newIterateCmd(), dir, "--json", "--rank", fmt.Sprint(r), "--world-size", "3", "--resume", state)
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := parseLines(t, out)
		if len(keys) != 5 { // ceil(13/3)
			t.Fatalf("resumed rank %d yields %d samples, want 5", r, len(keys))
		}
		second = append(second, keys)
	}
	for k := range 5 {
		for r := range 3 {
			got = append(got, second[r][k])
		}
	}
	if !slices.Equal(got[:21], all) {
		t.Fatalf("stopped and resumed order\n%v\ndiffers from one run\n%v", got[:21], all)
	}
}

func TestIterateErrors(t *testing.T) {
	dir := writeShards(t, 3)
	if _, _, err := execCmd(t, newIterateCmd(), dir, "--shuffle-buffer", "lots"); !errors.As(err, new(usageError)) {
		t.Errorf("bad --shuffle-buffer: %v, want a usage error", err)
	}
	if _, _, err := execCmd(t, newIterateCmd(), dir, "--rank", "2", "--world-size", "2"); !errors.As(err, new(usageError)) {
		t.Errorf("rank outside world: %v, want a usage error", err)
	}
	if _, _, err := execCmd(t, newIterateCmd(), dir, "--world-size", "0"); !errors.As(err, new(usageError)) {
		t.Errorf("--world-size 0: %v, want a usage error", err)
	}
	if _, _, err := execCmd(t, newIterateCmd(), filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing source: %v", err)
	}
	other := writeShards(t, 4)
	state := filepath.Join(t.TempDir(), "s.json")
	if _, _, err := execCmd(t, newIterateCmd(), other, "--limit", "1", "--state-out", state); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCmd(t, newIterateCmd(), dir, "--resume", state); err == nil || !strings.Contains(err.Error(), "another dataset") {
		t.Errorf("resume on another dataset: %v", err)
	}
}

func TestManifestCommand(t *testing.T) {
	dir := writeShards(t, 2, 3)
	out, stderr, err := execCmd(t, newManifestCmd(), dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := webdataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 2 || m.Shards[1].Samples != 3 || !strings.Contains(stderr, "5 samples") || !strings.Contains(out, `"sha256"`) {
		t.Fatalf("manifest %+v, stderr %q", m, stderr)
	}
	if _, _, err := execCmd(t, newManifestCmd(), dir, "--verify"); err != nil {
		t.Fatalf("verify of a fresh manifest: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shard-1.tar"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCmd(t, newManifestCmd(), dir, "--verify"); err == nil || !strings.Contains(err.Error(), "shard-1.tar") || !strings.Contains(err.Error(), "1 of 2 shards in") {
		t.Fatalf("verify after a change: %v, want an error naming shard-1.tar and counting 1 of 2 shards", err)
	}
	// The iterator uses the manifest: the changed shard is named.
	if _, _, err := execCmd(t, newIterateCmd(), dir, "--verify"); err == nil || !strings.Contains(err.Error(), "shard-1.tar") {
		t.Fatalf("iterate --verify: %v", err)
	}
}

// TestIterateChecksum: --checksum sha256 is the SHA-256 of the samples'
// field bytes in the order yielded, what scripts/bench-iterate.sh checks
// against Python's tarfile.
func TestIterateChecksum(t *testing.T) {
	dir := writeShards(t, 3, 2)
	h := sha256.New()
	for _, n := range []int{3, 2} {
		for i := range n {
			h.Write([]byte(strings.Repeat("x", 10+i)))
		}
	}
	out, _, err := execCmd(t, newIterateCmd(), dir, "--shuffle=false", "--checksum", "sha256", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if _, sum := parseLines(t, out); sum["sha256"] != hex.EncodeToString(h.Sum(nil)) {
		t.Errorf("sha256 %v, want %x", sum["sha256"], h.Sum(nil))
	}
	if _, _, err := execCmd(t, newIterateCmd(), dir, "--checksum", "md5"); !errors.As(err, new(usageError)) {
		t.Errorf("--checksum md5: %v, want a usage error", err)
	}
}

// TestIterateKeepsShardCounts checks that iterate records what it scanned
// of a dataset without a manifest in the scan cache ($GDSLOAD_SCAN_CACHE,
// a folder of the test run's: TestMain), one file per shard, and that a
// second run over the cached counts yields the same samples.
func TestIterateKeepsShardCounts(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(iterator.ScanCacheEnv, cache)
	dir := writeShards(t, 4, 6)
	var runs [2][]string
	for i := range runs {
		out, stderr, err := execCmd(t, newIterateCmd(), dir, "--seed", "5", "--json")
		require.NoError(t, err, stderr)
		keys, summary := parseLines(t, out)
		require.EqualValues(t, 10, summary["samples"], "run %d", i)
		runs[i] = keys
	}
	require.Equal(t, runs[0], runs[1])
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 2, "cache files, one per shard")

	t.Setenv(iterator.ScanCacheEnv, "off")
	out, stderr, err := execCmd(t, newIterateCmd(), dir, "--seed", "5", "--json")
	require.NoError(t, err, stderr)
	keys, _ := parseLines(t, out)
	require.Equal(t, runs[0], keys, "with the cache off")
}
