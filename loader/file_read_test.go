package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/fileops"
	"github.com/gdsload/gdsload/internal/fileops/errorfs"
	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/internal/uring"
)

// openWithHook opens path as OpenFile does, with hook called before every
// operation on it.
func openWithHook(path string, mode DirectMode, hook errorfs.Hook) (*File, error) {
	return openFile(path, mode, func(flag int) (*os.File, error) { return os.OpenFile(path, flag, 0) },
		func(f *os.File) fileops.File { return errorfs.WrapFile(fileops.OS(f), hook) })
}

// A direct read that the kernel interrupts (EINTR) or answers in aligned
// pieces is retried until the buffer is full; a short count that is not a
// multiple of the alignment is the end of the file.
func TestDirectReadRetriesEINTRAndShortReads(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 64<<10+100, 13)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	var hook errorfs.Hook = func(*errorfs.Op) error { return nil }
	f, err := openWithHook(path, DirectOn, func(op *errorfs.Op) error { return hook(op) })
	require.NoError(t, err)
	defer f.Close()
	calls, eintrs := 0, 0
	hook = func(op *errorfs.Op) error {
		if op.Kind != errorfs.OpPread {
			return nil
		}
		calls++
		if calls%3 == 1 {
			eintrs++
			return syscall.EINTR
		}
		// At most one alignment unit per call: many short reads.
		op.P = op.P[:min(len(op.P), int(f.align))]
		return nil
	}
	got := make([]byte, len(want))
	n, err := f.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, len(want), n)
	require.True(t, bytes.Equal(want, got))
	require.Greater(t, eintrs, 5)
	require.Greater(t, calls, 16, "read in aligned pieces")

	// A non-EINTR error fails the read, naming the offset.
	hook = func(op *errorfs.Op) error {
		if op.Kind == errorfs.OpPread {
			return syscall.EIO
		}
		return nil
	}
	_, err = f.ReadAt(got[:4096], 8192)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, "offset 8192")
}

// Small direct reads go through the process's io_uring where the kernel
// has one, and read the same bytes as larger ones through pread, at
// random aligned and unaligned offsets, from many goroutines at once.
func TestSmallDirectReadsThroughRing(t *testing.T) {
	dir := t.TempDir()
	testenv.NeedDirectIO(t, dir)
	path := writeRandom(t, dir, 4<<20+123, 5)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	require.True(t, f.Direct(), f.DirectReason())
	require.Equal(t, uring.Available(), f.ring, "small direct reads use the ring where it is available")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				n := []int{4096, 512, 300 << 10, 65536 + 7}[r.IntN(4)]
				off := r.Int64N(int64(len(want)))
				if r.IntN(2) == 0 {
					off &^= 4095
				}
				buf := alignedSlice(n, 4096)
				got, err := f.ReadAt(buf, off)
				end := min(off+int64(n), int64(len(want)))
				if int64(got) != end-off || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(buf[:got], want[off:end]) {
					errs <- fmt.Errorf("ReadAt(%d bytes at %d) = %d, %v", n, off, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
