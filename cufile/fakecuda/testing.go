package fakecuda

import (
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

// Use builds (once per process) and loads the double, resets it, applies
// cmds, and at the end of the test reports every allocation, pinned buffer,
// stream, event, handle, driver reference or registered buffer still held,
// then resets it again. It skips the test when the double cannot be built
// (no C compiler). Tests using it must not run in parallel: the double's
// state is per process.
func Use(t testing.TB, cmds ...string) *Session {
	t.Helper()
	s, err := shared()
	if err != nil {
		t.Skipf("CUDA test double not buildable here (a C compiler is needed): %v", err)
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
