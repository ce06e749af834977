package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stage to a URL is a usage error (exit 2) that writes nothing, not a
// local folder ./s3:/... reported as staged.
func TestStageURLDestinationIsUsage(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "f.bin"), []byte("x"), 0o644))
	t.Chdir(t.TempDir())
	for _, dest := range []string{"s3://models/upload/", "rdmafs://127.0.0.1:7420/x/"} {
		for _, extra := range [][]string{nil, {"--dry-run"}} {
			out, errs, code := runStageCmd(t, append(extra, src, dest)...)
			assert.Equal(t, exitUsage, code, "stage %v %s: stdout %q stderr %q", extra, dest, out, errs)
			assert.Contains(t, errs, "local directory")
			assert.NotContains(t, out, "staged")
		}
	}
	left, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, left, "a URL destination left a local folder")
}

// iterate --state-out and --resume with a URL are usage errors said before
// any shard is read, and no local folder named after the scheme appears.
func TestIterateStateURLRefused(t *testing.T) {
	dir := writeShards(t, 7, 5)
	t.Chdir(t.TempDir())
	for _, flag := range []string{"--state-out", "--resume"} {
		for _, u := range []string{"s3://models/state.json", "rdmafs://127.0.0.1:7420/state.json"} {
			out, stderr, code := run(t, "iterate", "--json", flag, u, dir)
			assert.Equal(t, exitUsage, code, "%s %s: %s", flag, u, stderr)
			assert.Contains(t, stderr, "local path")
			assert.Empty(t, out, "no sample is read")
		}
	}
	left, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, left, "a URL state file left a local folder")
	// Nor is a local folder that happens to be named after the scheme
	// written to.
	require.NoError(t, os.MkdirAll(filepath.Join("s3:", "models"), 0o755))
	_, stderr, code := run(t, "iterate", "--json", "--state-out", "s3://models/state.json", dir)
	assert.Equal(t, exitUsage, code, stderr)
	assert.NoFileExists(t, filepath.Join("s3:", "models", "state.json"))
}
