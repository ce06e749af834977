//go:build linux

package uring

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func testFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// forEachPath runs f with reads through the ring (where this kernel has
// one) and through pread.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Run("ring", func(t *testing.T) {
		if !Available() {
			t.Skip("no io_uring here")
		}
		f(t)
	})
	t.Run("pread", func(t *testing.T) {
		disabled.Store(true)
		defer disabled.Store(false)
		if Available() {
			t.Fatal("Available with the ring disabled")
		}
		f(t)
	})
}

// TestReadLikePread: byte counts, short reads at the end, EOF and errors
// are pread's.
func TestReadLikePread(t *testing.T) {
	f, data := testFile(t, 100_000)
	fd := int(f.Fd())
	forEachPath(t, func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			off     int64
			n       int
			wantN   int
			wantErr error
		}{
			{"start", 0, 4096, 4096, nil},
			{"middle, unaligned", 12345, 777, 777, nil},
			{"short at the end", 99_000, 4096, 1000, nil},
			{"at the end", 100_000, 10, 0, nil},
			{"past the end", 200_000, 10, 0, nil},
			{"negative offset", -1, 10, 0, syscall.EINVAL},
		} {
			buf := make([]byte, tc.n)
			n, err := Read(fd, buf, tc.off)
			if !errors.Is(err, tc.wantErr) || n != tc.wantN {
				t.Fatalf("%s: Read = %d, %v; want %d, %v", tc.name, n, err, tc.wantN, tc.wantErr)
			}
			if tc.wantN > 0 && !bytes.Equal(buf[:n], data[tc.off:tc.off+int64(n)]) {
				t.Fatalf("%s: wrong bytes", tc.name)
			}
		}
		if _, err := Read(-1, make([]byte, 1), 0); !errors.Is(err, syscall.EBADF) {
			t.Fatalf("bad descriptor: %v, want EBADF", err)
		}
		n, err := Read(fd, nil, 0)
		if n != 0 || err != nil {
			t.Fatalf("empty read: %d, %v", n, err)
		}
	})
}

// TestReadConcurrent: more readers than the ring has entries, each
// checking its bytes.
func TestReadConcurrent(t *testing.T) {
	f, data := testFile(t, 1<<20)
	fd := int(f.Fd())
	forEachPath(t, func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 2*Entries)
		for g := range 2 * Entries {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 7))
				buf := make([]byte, 4096)
				for range 20 {
					off := r.Int64N(int64(len(data) - len(buf)))
					n, err := Read(fd, buf, off)
					if err != nil || n != len(buf) || !bytes.Equal(buf, data[off:off+int64(n)]) {
						errs <- errors.New("wrong read")
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
	})
}

// TestReadDirect: O_DIRECT reads of aligned blocks, what the loader sends
// through the ring, where the test's file system takes O_DIRECT.
func TestReadDirect(t *testing.T) {
	f, data := testFile(t, 1<<20)
	d, err := os.OpenFile(f.Name(), os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Skipf("no O_DIRECT here: %v", err)
	}
	defer d.Close()
	mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	forEachPath(t, func(t *testing.T) {
		for _, off := range []int64{0, 4096, 1<<20 - 1<<16} {
			n, err := Read(int(d.Fd()), mem, off)
			if err != nil || n != len(mem) || !bytes.Equal(mem, data[off:off+int64(len(mem))]) {
				t.Fatalf("at %d: %d, %v", off, n, err)
			}
		}
	})
}
