package dl

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	// libc is on every machine that runs the tests; its loaded path is
	// absolute even though a bare name was asked for.
	l, err := Open("libc.so.6")
	if err != nil {
		t.Fatalf("Open(libc.so.6): %v", err)
	}
	if l.Handle == nil || !filepath.IsAbs(l.Path) || !strings.Contains(l.Path, "libc.so.6") {
		t.Fatalf("Open(libc.so.6) = %+v, want a handle and the absolute path mapped", l)
	}
	if _, err := Open("libgdsload-no-such-library.so.9"); err == nil || !strings.Contains(err.Error(), "libgdsload-no-such-library.so.9") {
		t.Fatalf("Open of a missing library: %v, want dlerror's text naming it", err)
	}
}
