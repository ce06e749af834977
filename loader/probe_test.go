package loader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The probe says whether O_DIRECT works on a folder (a scratch file it
// removes) and on a file, and why not where it cannot check.
func TestProbeDirectIO(t *testing.T) {
	dir := t.TempDir()
	r := ProbeDirectIO(dir)
	if r.FileSystem == "" || r.Reason == "" || (!r.OK && !strings.Contains(r.Reason, "refused")) {
		t.Fatalf("folder: %+v", r)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the scratch file stayed: %v", ents)
	}
	f := filepath.Join(dir, "data")
	if err := os.WriteFile(f, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ProbeDirectIO(f); r.Path != f || (r.OK && !strings.Contains(r.Reason, "O_DIRECT read of data")) {
		t.Fatalf("file: %+v", r)
	}
	if r := ProbeDirectIO(filepath.Join(dir, "missing")); r.OK || !strings.Contains(r.Reason, "no such file") {
		t.Fatalf("missing: %+v", r)
	}
	if m := MemlockLimit(); m.Soft == "" && m.Note == "" {
		t.Fatalf("memlock: %+v", m)
	}
}
