package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// iterate --help says what --verify checks, and the code does that: the
// manifest's CRC-32C where it has one (a wrong SHA-256 beside a right
// CRC-32C passes), else its SHA-256.
func TestIterateVerifyChecksWhatHelpSays(t *testing.T) {
	help := newIterateCmd().Flags().Lookup("verify").Usage
	assert.Contains(t, help, "CRC-32C, or its SHA-256 where the manifest has no CRC-32C")

	dir := writeShards(t, 3, 4)
	_, stderr, code := run(t, "manifest", dir)
	require.Equal(t, exitOK, code, stderr)
	orig, err := os.ReadFile(filepath.Join(dir, "index.json"))
	require.NoError(t, err)
	rewrite := func(edit func(sh map[string]any)) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(orig, &m))
		for _, sh := range m["shards"].([]any) {
			edit(sh.(map[string]any))
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644))
	}
	flip := func(hex string) string { // another valid digest of the same length
		if hex[0] == '0' {
			return "1" + hex[1:]
		}
		return "0" + hex[1:]
	}
	for _, tc := range []struct {
		name string
		edit func(sh map[string]any)
		ok   bool
	}{
		{"wrong sha256, right crc32c", func(sh map[string]any) { sh["sha256"] = flip(sh["sha256"].(string)) }, true},
		{"right sha256, wrong crc32c", func(sh map[string]any) { sh["crc32c"] = flip(sh["crc32c"].(string)) }, false},
		{"wrong sha256, no crc32c", func(sh map[string]any) { sh["sha256"] = flip(sh["sha256"].(string)); delete(sh, "crc32c") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rewrite(tc.edit)
			_, stderr, code := run(t, "iterate", "--json", "--shuffle=false", dir)
			if tc.ok {
				assert.Equal(t, exitOK, code, stderr)
				return
			}
			assert.Equal(t, exitError, code, stderr)
			assert.True(t, strings.Contains(stderr, "shard-0.tar") || strings.Contains(stderr, "shard-1.tar"), stderr)
			// --verify=false skips the digest.
			_, stderr, code = run(t, "iterate", "--json", "--shuffle=false", "--verify=false", dir)
			assert.Equal(t, exitOK, code, stderr)
		})
	}
}
