package profiling

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("Start(%q, %q) = %v, want an error starting %q", tc.cpu, tc.trace, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Start(%q, %q): %v", tc.cpu, tc.trace, err)
		}
		if err := stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	for path, magic := range map[string][]byte{cpu: {0x1f, 0x8b}, tr: []byte("go 1.")} {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(got, magic) {
			t.Errorf("%s: %d bytes starting % x (%v), want % x", path, len(got), got[:min(len(got), 8)], err, magic)
		}
	}
}
