package realcufile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv, set to 1, makes every test that cannot run against a real
// library fail instead of skipping.
const RequireEnv = "GDSLOAD_REQUIRE_REAL_CUFILE"

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Use sets the harness up for the test (undone at its end) and returns it
// with the real libraries. It skips the test where the machine lacks what
// the harness needs, or both libraries, and fails it instead under
// GDSLOAD_REQUIRE_REAL_CUFILE=1, where a missing library fails too.
func Use(t testing.TB) (*Harness, []Library) {
	t.Helper()
	if why := Missing(); why != "" {
		skipOrFail(t, "real libcufile harness: %s", why)
	}
	var found []Library
	for _, l := range Libraries(repoRoot(t)) {
		if l.Path == "" {
			if os.Getenv(RequireEnv) == "1" {
				t.Fatalf("real libcufile %q not installed: %s (%s=1)", l.Name, l.Install, RequireEnv)
			}
			t.Logf("real libcufile %q not installed: %s", l.Name, l.Install)
			continue
		}
		found = append(found, l)
	}
	if len(found) == 0 {
		skipOrFail(t, "no real libcufile installed")
	}
	h, err := Setup(t.TempDir())
	if err != nil {
		t.Fatalf("real libcufile harness: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("real libcufile harness: %v", err)
		}
	})
	return h, found
}

// repoRoot is the folder holding go.mod, above the test's folder.
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}
