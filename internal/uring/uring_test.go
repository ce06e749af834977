//go:build linux

package uring

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, os.WriteFile(p, data, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, data
}

// needRing skips t where the kernel gives this process no io_uring
// (testenv's own probe says so; it fails instead under
// GDSLOAD_REQUIRE_IO_URING), and fails it where the kernel gives one but
// the package does not use it.
func needRing(t *testing.T) {
	t.Helper()
	testenv.NeedIOURing(t)
	require.True(t, Available(), "the kernel sets up an io_uring, but the package reads without one")
}

// forEachPath runs f with reads through the ring (where this kernel has
// one; ReadBatch through a ring of its own, then through the process's
// ring) and through pread.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Run("ring", func(t *testing.T) {
		needRing(t)
		f(t)
	})
	t.Run("shared ring", func(t *testing.T) {
		needRing(t)
		sharedOnly.Store(true)
		defer sharedOnly.Store(false)
		f(t)
	})
	t.Run("pread", func(t *testing.T) {
		disabled.Store(true)
		defer disabled.Store(false)
		require.False(t, Available(), "Available with the ring disabled")
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
			require.ErrorIs(t, err, tc.wantErr, "%s: Read = %d, %v; want %d, %v", tc.name, n, err, tc.wantN, tc.wantErr)
			require.Equal(t, tc.wantN, n, "%s: Read = %d, %v; want %d, %v", tc.name, n, err, tc.wantN, tc.wantErr)
			if tc.wantN > 0 {
				require.True(t, bytes.Equal(buf[:n], data[tc.off:tc.off+int64(n)]), "%s: wrong bytes", tc.name)
			}
		}
		_, err := Read(-1, make([]byte, 1), 0)
		require.ErrorIs(t, err, syscall.EBADF, "bad descriptor")
		n, err := Read(fd, nil, 0)
		require.Zero(t, n, "empty read: %d, %v", n, err)
		require.NoError(t, err, "empty read: %d, %v", n, err)
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
			require.NoError(t, err)
		}
	})
}

// TestReadDirect: O_DIRECT reads of aligned blocks, what the loader sends
// through the ring, where the test's file system takes O_DIRECT.
func TestReadDirect(t *testing.T) {
	f, data := testFile(t, 1<<20)
	testenv.NeedDirectIO(t, filepath.Dir(f.Name()))
	d, err := os.OpenFile(f.Name(), os.O_RDONLY|unix.O_DIRECT, 0)
	require.NoError(t, err, "the directory takes O_DIRECT, but opening the file with it failed")
	defer d.Close()
	mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	forEachPath(t, func(t *testing.T) {
		for _, off := range []int64{0, 4096, 1<<20 - 1<<16} {
			n, err := Read(int(d.Fd()), mem, off)
			require.NoError(t, err, "at %d: %d, %v", off, n, err)
			require.Equal(t, len(mem), n, "at %d: %d, %v", off, n, err)
			require.True(t, bytes.Equal(mem, data[off:off+int64(len(mem))]), "at %d: %d, %v", off, n, err)
		}
	})
}

// TestReadBatch: every read handed out comes back once, with pread's count
// and bytes (short at the end, EINVAL for a negative offset), whatever the
// depth, including more than the ring's entries; reads stop when next
// says so, and no buffer is handed to the kernel twice at once.
func TestReadBatch(t *testing.T) {
	f, data := testFile(t, 1<<20)
	fd := int(f.Fd())
	forEachPath(t, func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			depth int
			reads int
		}{
			{"one at a time", 1, 50},
			{"eight in flight", 8, 500},
			{"deeper than the ring", 2 * Entries, 2000},
			{"more depth than reads", 64, 10},
			{"no reads", 8, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(tc.depth), uint64(tc.reads)))
				offs := make([]int64, tc.reads)
				lens := make([]int, tc.reads)
				for i := range offs {
					offs[i], lens[i] = r.Int64N(int64(len(data))), 1+r.IntN(8192)
				}
				if tc.reads > 2 {
					offs[1] = -5                     // EINVAL, as Read says
					offs[2] = int64(len(data)) - 100 // short at the end
					lens[2] = 4096
				}
				bufs := make([][]byte, tc.depth)
				for i := range bufs {
					bufs[i] = make([]byte, 8192)
				}
				busy := make([]bool, tc.depth)
				free := make([]int, 0, tc.depth)
				for i := range tc.depth {
					free = append(free, i)
				}
				owner := make([]int, tc.reads) // the buffer each read went into
				seen := make([]bool, tc.reads)
				next := 0
				ReadBatch(fd, tc.depth, func() (Req, bool) {
					if next == tc.reads {
						return Req{}, false
					}
					require.NotEmpty(t, free, "next called with every buffer in flight")
					b := free[len(free)-1]
					free = free[:len(free)-1]
					require.False(t, busy[b], "buffer %d handed out twice", b)
					busy[b], owner[next] = true, b
					next++
					return Req{Buf: bufs[b][:lens[next-1]], Off: offs[next-1], Tag: next - 1}, true
				}, func(q Req, n int, err error) {
					i := q.Tag
					require.False(t, seen[i], "read %d handed back twice", i)
					seen[i] = true
					b := owner[i]
					busy[b] = false
					free = append(free, b)
					wantN, wantErr := len(q.Buf), error(nil)
					switch {
					case offs[i] < 0:
						wantN, wantErr = 0, syscall.EINVAL
					case offs[i]+int64(wantN) > int64(len(data)):
						wantN = len(data) - int(offs[i])
					}
					require.Equal(t, wantN, n, "read %d at %d: %d, %v; want %d, %v", i, offs[i], n, err, wantN, wantErr)
					require.ErrorIs(t, err, wantErr, "read %d at %d: %d, %v; want %d, %v", i, offs[i], n, err, wantN, wantErr)
					if n > 0 {
						require.True(t, bytes.Equal(q.Buf[:n], data[offs[i]:offs[i]+int64(n)]), "read %d at %d: wrong bytes", i, offs[i])
					}
				})
				for i, ok := range seen {
					require.True(t, ok, "read %d never handed back", i)
				}
			})
		}
	})
}

// TestReadBatchPanics: a callback that panics leaves the rings as it
// found them: the reads in flight are waited for, every entry of the
// process's ring is free again, and a batch's own ring goes back idle with
// nothing queued or unconsumed.
func TestReadBatchPanics(t *testing.T) {
	needRing(t)
	f, _ := testFile(t, 1<<20)
	bufs := make([][]byte, Entries)
	for i := range bufs {
		bufs[i] = make([]byte, 4096)
	}
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "own ring", true: "shared ring"}[shared], func(t *testing.T) {
			sharedOnly.Store(shared)
			defer sharedOnly.Store(false)
			idle.Lock()
			before := len(idle.rings)
			idle.Unlock()
			next := 0
			func() {
				defer func() {
					require.NotNil(t, recover(), "the callback's panic did not reach the caller")
				}()
				ReadBatch(int(f.Fd()), Entries, func() (Req, bool) {
					if next == Entries {
						return Req{}, false
					}
					next++
					return Req{Buf: bufs[next-1], Off: int64(next-1) * 4096}, true
				}, func(Req, int, error) { panic("callback failed") })
			}()
			got := len(get().slots)
			require.Equal(t, Entries, got, "%d of %d ring entries free after the panic", got, Entries)
			idle.Lock()
			defer idle.Unlock()
			if shared {
				return
			}
			// The batch's ring went back idle: one reused (same thread),
			// or one more, up to maxIdle.
			require.GreaterOrEqual(t, len(idle.rings), max(before, 1), "idle rings after the panic")
			require.LessOrEqual(t, len(idle.rings), min(before+1, maxIdle), "idle rings after the panic")
			for _, r := range idle.rings {
				sq := atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
				cq := atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
				require.Zero(t, sq, "an idle ring holds queued reads")
				require.Zero(t, cq, "an idle ring holds unconsumed completions")
			}
		})
	}
}

// TestReadBatchManyThreads: batches run at once from many goroutines, so
// on many threads, again and again. A ring of a batch's own takes reads
// only from the thread that set it up (ownFlags): one handed to a batch
// on another thread would fail its first submission, which panics. Every
// batch reads the right bytes, and idle rings are reused by their thread.
func TestReadBatchManyThreads(t *testing.T) {
	needRing(t)
	f, data := testFile(t, 1<<20)
	fd := int(f.Fd())
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			buf := make([][]byte, 4)
			for i := range buf {
				buf[i] = make([]byte, 512)
			}
			for range 50 {
				left := 20
				free := []int{0, 1, 2, 3}
				ReadBatch(fd, len(buf), func() (Req, bool) {
					if left == 0 {
						return Req{}, false
					}
					left--
					b := free[len(free)-1]
					free = free[:len(free)-1]
					return Req{Buf: buf[b], Off: r.Int64N(int64(len(data) - 512)), Tag: b}, true
				}, func(q Req, n int, err error) {
					if err != nil || n != len(q.Buf) || !bytes.Equal(q.Buf, data[q.Off:q.Off+int64(n)]) {
						bad.Add(1)
					}
					free = append(free, q.Tag)
				})
			}
		})
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "reads with wrong bytes or errors")
	idle.Lock()
	defer idle.Unlock()
	require.LessOrEqual(t, len(idle.rings), maxIdle, "idle rings kept")
}
