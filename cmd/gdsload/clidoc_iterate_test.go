package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/CLI.md's iterate lines run as written, one after the other, on a
// dataset in data/: the first saves a state that the second resumes.
func TestCLIDocIterateExample(t *testing.T) {
	readme, err := os.ReadFile("../../docs/CLI.md")
	require.NoError(t, err)
	var lines [][]string
	for _, l := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(l, "gdsload iterate data/ ") {
			continue
		}
		l, _, _ = strings.Cut(l, "#")
		lines = append(lines, strings.Fields(l)[1:])
	}
	require.GreaterOrEqual(t, len(lines), 2, "docs/CLI.md shows a run that saves its state and one that resumes it")

	work := t.TempDir()
	data := writeShards(t, 1200, 1200, 1200, 1200, 1200, 1200, 1200, 1200) // over 1,000 samples a rank at world size 8
	require.NoError(t, os.Symlink(data, filepath.Join(work, "data")))
	t.Chdir(work)
	for _, args := range lines {
		_, stderr, code := run(t, args...)
		require.Equal(t, exitOK, code, "gdsload %s: %s", strings.Join(args, " "), stderr)
	}
	require.FileExists(t, "state.json")
}
