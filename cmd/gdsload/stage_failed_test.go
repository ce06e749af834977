package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stage that fails a file does not open with "staged <all the bytes>":
// its first line says what was staged and how many files were not.
func TestStageFailedSummary(t *testing.T) {
	src := t.TempDir()
	bad := make([]byte, 1<<20)
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.bin"), bad, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "b.bin"), []byte("fine"), 0o644))
	// A manifest whose digest for a.bin is wrong: a.bin fails its check.
	manifest := fmt.Sprintf(`{"format":"webdataset","version":1,"shards":[{"name":"a.bin","bytes":%d,"samples":1,"sha256":%q}]}`,
		len(bad), strings.Repeat("0", 64))
	require.NoError(t, os.WriteFile(filepath.Join(src, "index.json"), []byte(manifest), 0o644))

	dst := filepath.Join(t.TempDir(), "out")
	out, stderr, code := runStageCmd(t, src, dst)
	require.Equal(t, exitPartial, code, "stdout %s stderr %s", out, stderr)
	first, _, _ := strings.Cut(out, "\n")
	assert.NotContains(t, first, "1.0 MiB", "the failed file's bytes are not counted as staged")
	assert.Contains(t, first, "in 2 of 3 files")
	assert.Contains(t, first, "1 could not be staged")

	// Nothing staged: the first line says so.
	dst = filepath.Join(t.TempDir(), "out")
	out, stderr, code = runStageCmd(t, filepath.Join(src, "a.bin"), dst)
	require.Equal(t, exitError, code, "stdout %s stderr %s", out, stderr)
	first, _, _ = strings.Cut(out, "\n")
	assert.Contains(t, first, "nothing to "+dst+": 1 file could not be staged")
	assert.NoFileExists(t, filepath.Join(dst, "a.bin"))
}
