package loader

import (
	"bytes"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A direct read that the kernel interrupts (EINTR) or answers in aligned
// pieces is retried until the buffer is full; a short count that is not a
// multiple of the alignment is the end of the file.
func TestDirectReadRetriesEINTRAndShortReads(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 64<<10+100, 13)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := OpenFile(path, DirectOn)
	require.NoError(t, err)
	defer f.Close()
	calls, eintrs := 0, 0
	f.preadHook = func(b []byte, off int64) (int, error) {
		calls++
		if calls%3 == 1 {
			eintrs++
			return 0, syscall.EINTR
		}
		// At most one alignment unit per call: many short reads.
		return pread(f.f, b[:min(len(b), int(f.align))], off)
	}
	got := make([]byte, len(want))
	n, err := f.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, len(want), n)
	require.True(t, bytes.Equal(want, got))
	require.Greater(t, eintrs, 5)
	require.Greater(t, calls, 16, "read in aligned pieces")

	// A non-EINTR error fails the read, naming the offset.
	f.preadHook = func([]byte, int64) (int, error) { return 0, syscall.EIO }
	_, err = f.ReadAt(got[:4096], 8192)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, "offset 8192")
}
