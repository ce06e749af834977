package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspect takes a directory as a load does: the one checkpoint it holds
// (its index, or its only .safetensors file); other directories are
// refused saying why.
func TestInspectCheckpointDirectory(t *testing.T) {
	b, err := os.ReadFile("../../testdata/model.safetensors")
	require.NoError(t, err)
	single := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(single, "model.safetensors"), b, 0o644))
	sharded := filepath.Dir(writeShardedCheckpoint(t, map[string]string{
		"w1": "model-a.safetensors", "b1": "model-a.safetensors", "w2": "model-b.safetensors",
	}))
	for _, tc := range []struct{ dir, file string }{
		{single, filepath.Join(single, "model.safetensors")},
		{sharded, filepath.Join(sharded, "model.safetensors.index.json")},
	} {
		want, stderr, code := runInspectCmd(t, "--json", tc.file)
		require.Equal(t, exitOK, code, stderr)
		got, stderr, code := runInspectCmd(t, "--json", tc.dir)
		require.Equal(t, exitOK, code, stderr)
		assert.JSONEq(t, want, got, tc.dir)
	}

	two := t.TempDir()
	for _, n := range []string{"a.safetensors", "b.safetensors"} {
		require.NoError(t, os.WriteFile(filepath.Join(two, n), b, 0o644))
	}
	_, stderr, code := runInspectCmd(t, two)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "2 .safetensors files and no index")
}
