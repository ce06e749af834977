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
