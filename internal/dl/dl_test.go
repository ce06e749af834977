package dl

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	// libc is on every machine that runs the tests; its loaded path is
	// absolute even though a bare name was asked for.
	l, err := Open("libc.so.6")
	require.NoError(t, err, "Open(libc.so.6)")
	require.NotNil(t, l.Handle, "Open(libc.so.6) = %+v, want a handle and the absolute path mapped", l)
	require.True(t, filepath.IsAbs(l.Path), "Open(libc.so.6) = %+v, want a handle and the absolute path mapped", l)
	require.Contains(t, l.Path, "libc.so.6", "Open(libc.so.6) = %+v, want a handle and the absolute path mapped", l)
	_, err = Open("libgdsload-no-such-library.so.9")
	require.Error(t, err, "Open of a missing library: %v, want dlerror's text naming it", err)
	require.ErrorContains(t, err, "libgdsload-no-such-library.so.9", "Open of a missing library: %v, want dlerror's text naming it", err)
}

func TestOpenFirst(t *testing.T) {
	reject := func(l *Lib) error { return fmt.Errorf("%s: not this one", l.Path) }
	accept := func(*Lib) error { return nil }
	for _, tc := range []struct {
		name, env string
		names     []string
		accept    func(*Lib) error
		want      string // in the error; "" for success
	}{
		{"the first that maps", "", []string{"libgdsload-no-such.so.1", "libc.so.6"}, accept, ""},
		{"every candidate's reason", "", []string{"libgdsload-no-such.so.1", "libc.so.6"}, reject, "libgdsload-no-such.so.1"},
		{"rejected by accept", "", []string{"libc.so.6"}, reject, "not this one"},
		{"disabled", "off", []string{"libc.so.6"}, accept, "GDSLOAD_TEST_LIB=off"},
		{"the environment's instead", "libgdsload-other.so.2", []string{"libc.so.6"}, accept, "libgdsload-other.so.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GDSLOAD_TEST_LIB", tc.env)
			l, err := OpenFirst("GDSLOAD_TEST_LIB", "the test library", tc.names, tc.accept)
			if tc.want == "" {
				require.NoError(t, err)
				require.Contains(t, l.Path, "libc.so.6")
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
