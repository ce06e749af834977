package profiling

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Start writes what go tool pprof and go tool trace read; a path that
// cannot be created fails naming the profile and leaves nothing running,
// so that a second Start succeeds.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	cpu, tr := filepath.Join(dir, "cpu"), filepath.Join(dir, "trace")
	missing := filepath.Join(dir, "no-such-dir", "f")
	for _, tc := range []struct {
		cpu, trace, wantErr string
	}{
		{cpu: missing, wantErr: "cpu profile"},
		{cpu: cpu, trace: missing, wantErr: "trace"},
		{},
		{cpu: cpu, trace: tr},
	} {
		stop, err := Start(tc.cpu, tc.trace)
		if tc.wantErr != "" {
			require.Error(t, err, "Start(%q, %q) = %v, want an error starting %q", tc.cpu, tc.trace, err, tc.wantErr)
			require.True(t, strings.HasPrefix(err.Error(), tc.wantErr), "Start(%q, %q) = %v, want an error starting %q", tc.cpu, tc.trace, err, tc.wantErr)
			continue
		}
		require.NoError(t, err, "Start(%q, %q)", tc.cpu, tc.trace)
		require.NoError(t, stop(), "stop")
	}
	for path, magic := range map[string][]byte{cpu: {0x1f, 0x8b}, tr: []byte("go 1.")} {
		got, err := os.ReadFile(path)
		if assert.NoError(t, err, path) {
			assert.True(t, bytes.HasPrefix(got, magic), "%s: %d bytes starting % x, want % x", path, len(got), got[:min(len(got), 8)], magic)
		}
	}
}
