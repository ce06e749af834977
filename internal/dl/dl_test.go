package dl

import (
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
