package fakecuda

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// Session is the double as one test uses it.
type Session struct {
	*Libs
	*Control
}

var shared = sync.OnceValues(func() (*Session, error) {
	libs, err := Cached()
	if err != nil {
		return nil, err
	}
	ctl, err := libs.Open()
	if err != nil {
		return nil, err
	}
	return &Session{Libs: libs, Control: ctl}, nil
})

// Leaks are the counters that must be zero once a test gave everything
// back; "misuse" counts what the double refused as wrong use.
var Leaks = []string{"allocs", "pinned", "streams", "events", "handles", "driver_refs", "bufreg", "dmabufs", "misuse"}

// The variables under which a missing C compiler fails the tests that need
// the double instead of skipping them.
var requireVars = []string{"GDSLOAD_REQUIRE_TOOLS", "GDSLOAD_REQUIRE_REAL_CUFILE"}

// Compiler returns the C compiler Build runs ($CC, else gcc) as found on
// PATH, or an error saying it is missing.
func Compiler() (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	p, err := exec.LookPath(cc)
	if err != nil {
		return "", fmt.Errorf("no C compiler to build the CUDA test double (%s): %w", cc, err)
	}
	return p, nil
}

// Use builds (once per process) and loads the double, resets it, applies
// cmds, and at the end of the test reports every allocation, pinned buffer,
// stream, event, handle, driver reference or registered buffer still held,
// then resets it again. Only a missing C compiler (Compiler) skips the
// test, and fails it where GDSLOAD_REQUIRE_TOOLS or
// GDSLOAD_REQUIRE_REAL_CUFILE is 1; a build that fails with a compiler
// present fails the test. Tests using it must not run in parallel: the
// double's state is per process.
func Use(t testing.TB, cmds ...string) *Session {
	t.Helper()
	if _, err := Compiler(); err != nil {
		for _, v := range requireVars {
			if os.Getenv(v) == "1" {
				t.Fatalf("%v (%s=1)", err, v)
			}
		}
		t.Skip(err)
	}
	s, err := shared()
	if err != nil {
		t.Fatalf("CUDA test double: %v", err)
	}
	if err := s.Do("reset"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if err := s.Do(c); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, c := range Leaks {
			if n := s.Counter(c); n != 0 {
				t.Errorf("CUDA test double still holds %d %s at the end of the test", n, c)
			}
		}
		if m := s.Misuse(); m != "" {
			t.Errorf("CUDA test double refused a misuse: %s", m)
		}
		if err := s.Do("reset"); err != nil {
			t.Error(err)
		}
	})
	return s
}
