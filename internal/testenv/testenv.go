// Package testenv decides, for the project's tests, whether this machine
// can run a test: whether a tool, a library or a Python module is
// installed, whether a directory takes O_DIRECT. Each answer comes from a
// probe of the machine itself, never from the code under test, so a
// regression in that code fails its tests instead of turning them into
// skips.
//
// A test that lacks what it needs goes through Missing: it skips, saying
// what is missing and how to install it, except where RequireTools is set
// (CI sets it, having installed everything), where it fails instead.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireTools names the environment variable that turns every skip for a
// missing tool, library or module into a failure. .ci/run sets it.
const RequireTools = "GDSLOAD_REQUIRE_TOOLS"

// Missing ends tb for want of something this machine lacks: it skips with
// the reason, or, where RequireTools is set to anything but "" or "0",
// fails with it.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if v := os.Getenv(RequireTools); v != "" && v != "0" {
		tb.Fatalf("%s (%s=%s: a missing tool fails instead of skipping)", msg, RequireTools, v)
	}
	tb.Skip(msg)
}

// Tool returns the path of the command name found on PATH; where there is
// none, it calls Missing with install, what provides it (a Debian package).
func Tool(tb testing.TB, name, install string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, "%s not found on PATH (%v): install %s", name, err, install)
	}
	return p
}

// PythonModules checks that the interpreter python imports every module
// in modules, and calls Missing otherwise (install says what provides
// them).
func PythonModules(tb testing.TB, python, install string, modules ...string) {
	tb.Helper()
	Tool(tb, python, "python3")
	out, err := exec.Command(python, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput()
	if err != nil {
		Missing(tb, "%s cannot import %s (%v: %s): install %s", python, strings.Join(modules, ", "),
			err, strings.TrimSpace(lastLine(out)), install)
	}
}

// Library checks that the dynamic linker's cache (ldconfig -p) lists the
// shared library soname, and calls Missing otherwise.
func Library(tb testing.TB, soname, install string) {
	tb.Helper()
	ldconfig := "/sbin/ldconfig"
	if _, err := os.Stat(ldconfig); err != nil {
		ldconfig = Tool(tb, "ldconfig", "libc-bin")
	}
	out, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		tb.Fatalf("%s -p: %v", ldconfig, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == soname {
			return
		}
	}
	Missing(tb, "%s is not in the dynamic linker's cache (ldconfig -p): install %s", soname, install)
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
