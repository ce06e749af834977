package realcufile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// The environment a child started by Each runs under.
const (
	childEnv = "GDSLOAD_REALCUFILE_CHILD" // the library's name
	dirEnv   = "GDSLOAD_REALCUFILE_DIR"   // Harness.Dir
	tmpfsEnv = "GDSLOAD_REALCUFILE_TMPFS" // Harness.Tmpfs
	logEnv   = "GDSLOAD_REALCUFILE_LOG"   // Harness.LogFile
)

// Child is what a test body run by Each gets: the library it runs
// against and the harness's folders.
type Child struct {
	Library         string
	Dir, Tmpfs, Log string
}

// Each runs body against each real library, each in a child process of
// the test binary (libcufile is loaded under its one soname, and cuFile
// 1.14 may need the shim preloaded), with the harness's environment
// (Harness.Env) and GDSLOAD_TEST_HELPER=realcufile, so that a TestMain
// loads no double of its own. The test must be a top-level test. In the
// child, Each just runs body.
func Each(t *testing.T, body func(t *testing.T, c Child)) {
	t.Helper()
	if name := os.Getenv(childEnv); name != "" {
		body(t, Child{Library: name, Dir: os.Getenv(dirEnv), Tmpfs: os.Getenv(tmpfsEnv), Log: os.Getenv(logEnv)})
		return
	}
	h, libs := Use(t)
	top := t.Name()
	for _, lib := range libs {
		t.Run(lib.Name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^"+regexp.QuoteMeta(top)+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), h.Env(lib)...)
			cmd.Env = append(cmd.Env, childEnv+"="+lib.Name, dirEnv+"="+h.Dir, tmpfsEnv+"="+h.Tmpfs,
				logEnv+"="+h.LogFile, "GDSLOAD_TEST_HELPER=realcufile")
			out, err := cmd.CombinedOutput()
			t.Logf("child process against %s (%s):\n%s", lib.Name, lib.Path, out)
			if err != nil {
				t.Fatalf("child process against %s: %v", lib.Path, err)
			}
			if !strings.Contains(string(out), "--- PASS: "+top) || strings.Contains(string(out), "--- SKIP") {
				t.Fatalf("child process against %s did not pass every test (see its output above)", lib.Path)
			}
		})
	}
}
