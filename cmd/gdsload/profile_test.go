package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hidden --cpuprofile and --trace flags write what go tool pprof and
// go tool trace read, around any command; a path that cannot be created
// fails naming the flag.
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		flag  string
		magic []byte // how the file starts
	}{
		{"--cpuprofile", []byte{0x1f, 0x8b}}, // gzipped protobuf
		{"--trace", []byte("go 1.")},
	} {
		path := filepath.Join(dir, strings.TrimPrefix(tc.flag, "--"))
		if _, _, err := execCmd(t, newRootCmd(), "version", tc.flag, path); err != nil {
			t.Fatalf("version %s: %v", tc.flag, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(got, tc.magic) {
			t.Errorf("%s wrote %d bytes starting % x (%v), want a file starting % x", tc.flag, len(got), got[:min(len(got), 8)], err, tc.magic)
		}
		_, _, err = execCmd(t, newRootCmd(), "version", tc.flag, filepath.Join(dir, "no-such-dir", "f"))
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s into a missing directory: %v, want an error naming the flag", tc.flag, err)
		}
	}
}
