package loader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gdsload/gdsload/internal/uring"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(uring.Reaper)) }

// writeRandom writes a file of n pseudo-random bytes and returns its path.
func writeRandom(t testing.TB, dir string, n int, seed uint64) string {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	path := filepath.Join(dir, fmt.Sprintf("f-%d-%d.bin", n, seed))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// sha256sum asks the real tool, so the loader is checked against an
// independent implementation.
func sha256sum(t testing.TB, path string) string {
	t.Helper()
	out, err := exec.Command("sha256sum", path).Output()
	if err != nil {
		t.Skipf("sha256sum not runnable: %v", err)
	}
	return strings.Fields(string(out))[0]
}

var testSizes = []int{0, 1, 511, 4095, 4096, 4097, 5<<20 + 12345}

func TestLoadByteExact(t *testing.T) {
	dir := t.TempDir()
	ring, err := NewRing(16, 1<<20)
	require.NoError(t, err)
	defer ring.Close()
	for _, size := range testSizes {
		path := writeRandom(t, dir, size, 1)
		want := sha256sum(t, path)
		for _, mode := range []DirectMode{DirectOff, DirectOn} {
			for _, workers := range []int{1, 8} {
				for _, dest := range []string{"caller", "caller-unaligned", "ring"} {
					name := fmt.Sprintf("size=%d/direct=%s/workers=%d/%s", size, mode, workers, dest)
					t.Run(name, func(t *testing.T) {
						f, err := OpenFile(path, mode)
						require.NoError(t, err)
						defer f.Close()
						require.Equal(t, mode == DirectOn, f.Direct(), f.DirectReason())
						opts := Options{Workers: workers, ChunkSize: 1 << 20, Checksum: ChecksumSHA256}
						var buf []byte
						var dst Destination = ring
						switch dest {
						case "caller":
							buf, err = AllocHost(size)
							require.NoError(t, err)
							defer FreeHost(buf)
							dst = NewHostBuffer(buf)
						case "caller-unaligned":
							buf = make([]byte, size+3)[3:]
							dst = NewHostBuffer(buf)
						}
						res, err := Load(context.Background(), []Job{WholeFile(f, dst)}, opts)
						require.NoError(t, err)
						require.Equal(t, int64(size), res.Bytes)
						require.Len(t, res.Files, 1)
						require.Equal(t, want, res.Files[0].SHA256, "digest of the bytes as landed")
						if buf != nil {
							got := sha256.Sum256(buf)
							require.Equal(t, want, hex.EncodeToString(got[:]), "bytes in the caller's buffer")
						}
					})
				}
			}
		}
	}
}

func TestLoadManyFilesOneScheduler(t *testing.T) {
	dir := t.TempDir()
	var jobs []Job
	var bufs [][]byte
	var paths []string
	for i := range 40 {
		p := writeRandom(t, dir, 1000+i*777, uint64(i))
		f, err := OpenFile(p, DirectAuto)
		require.NoError(t, err)
		defer f.Close()
		b := make([]byte, f.Size())
		bufs = append(bufs, b)
		paths = append(paths, p)
		jobs = append(jobs, WholeFile(f, NewHostBuffer(b)))
	}
	res, err := Load(context.Background(), jobs, Options{Workers: 4, Checksum: ChecksumCRC32C})
	require.NoError(t, err)
	require.Len(t, res.Files, 40)
	for i, p := range paths {
		want, err := os.ReadFile(p)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, bufs[i]), p)
		require.Len(t, res.Files[i].CRC32C, 8)
	}
}

func TestLoadRangeIntoOffset(t *testing.T) {
	dir := t.TempDir()
	path := writeRandom(t, dir, 3<<20+77, 9)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := OpenFile(path, DirectOn)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 2<<20)
	job := Job{Source: f, Offset: 12345, Length: 1<<20 + 999, Dest: NewHostBuffer(buf), DestOffset: 4096 + 12345%4096}
	_, err = Load(context.Background(), []Job{job}, Options{Workers: 3, ChunkSize: 256 << 10})
	require.NoError(t, err)
	require.Equal(t, data[12345:12345+1<<20+999], buf[job.DestOffset:job.DestOffset+job.Length])
}

func TestLoadRejectsBadJobs(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(writeRandom(t, dir, 100, 1), DirectOff)
	require.NoError(t, err)
	defer f.Close()
	for name, job := range map[string]Job{
		"past end":        {Source: f, Offset: 50, Length: 51, Dest: NewHostBuffer(make([]byte, 200))},
		"dest too small":  {Source: f, Length: -1, Dest: NewHostBuffer(make([]byte, 99))},
		"negative offset": {Source: f, Offset: -1, Length: 10, Dest: NewHostBuffer(make([]byte, 200))},
		"no destination":  {Source: f, Length: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(context.Background(), []Job{job}, Options{})
			require.Error(t, err)
		})
	}
}

// truncatingSource truncates its file on disk after the first chunk it
// serves, like a writer racing the load.
type truncatingSource struct {
	*File
	once atomic.Bool
}

func (s *truncatingSource) ReadAt(p []byte, off int64) (int, error) {
	if s.once.CompareAndSwap(false, true) {
		if err := os.Truncate(s.Name(), 4096); err != nil {
			return 0, err
		}
	}
	return s.File.ReadAt(p, off)
}

func TestLoadFileTruncatedDuringLoad(t *testing.T) {
	for _, mode := range []DirectMode{DirectOff, DirectOn} {
		t.Run(mode.String(), func(t *testing.T) {
			path := writeRandom(t, t.TempDir(), 4<<20, 3)
			f, err := OpenFile(path, mode)
			require.NoError(t, err)
			defer f.Close()
			src := &truncatingSource{File: f}
			_, err = Load(context.Background(), []Job{WholeFile(src, NewHostBuffer(make([]byte, f.Size())))},
				Options{Workers: 1, ChunkSize: 1 << 20})
			require.ErrorIs(t, err, ErrChanged)
			require.Contains(t, err.Error(), path)
			require.Contains(t, err.Error(), "offset")
		})
	}
}

// rewritingSource rewrites its file in place (same size) mid-load.
type rewritingSource struct {
	*File
	once atomic.Bool
}

func (s *rewritingSource) ReadAt(p []byte, off int64) (int, error) {
	n, err := s.File.ReadAt(p, off)
	if s.once.CompareAndSwap(false, true) {
		w, werr := os.OpenFile(s.Name(), os.O_WRONLY, 0)
		if werr != nil {
			return n, werr
		}
		_, werr = w.WriteAt([]byte("rewritten"), s.Size()-20)
		w.Close()
		if werr != nil {
			return n, werr
		}
		// A file system with coarse timestamps may give the write the
		// time of the open: set one apart, as a later write would have.
		if werr = os.Chtimes(s.Name(), time.Time{}, s.ModTime().Add(time.Second)); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func TestLoadFileRewrittenDuringLoad(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 3<<20, 4)
	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	_, err = Load(context.Background(), []Job{WholeFile(&rewritingSource{File: f}, NewHostBuffer(make([]byte, f.Size())))},
		Options{Workers: 2, ChunkSize: 1 << 20})
	require.ErrorIs(t, err, ErrChanged)
	require.Contains(t, err.Error(), "verify "+path)
}

func TestLoadFileReplacedDuringLoad(t *testing.T) {
	dir := t.TempDir()
	path := writeRandom(t, dir, 2<<20, 5)
	other := writeRandom(t, dir, 2<<20, 6)
	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.Rename(other, path))
	_, err = Load(context.Background(), []Job{WholeFile(f, NewHostBuffer(make([]byte, f.Size())))}, Options{})
	require.ErrorIs(t, err, ErrChanged)
	require.Contains(t, err.Error(), "another file")
}

// slowSource blocks every read until gate is closed.
type slowSource struct {
	name    string
	size    int64
	gate    chan struct{}
	started atomic.Int32 // reads begun
}

func (s *slowSource) Name() string { return s.name }
func (s *slowSource) Size() int64  { return s.size }
func (s *slowSource) ReadAt(p []byte, off int64) (int, error) {
	s.started.Add(1)
	<-s.gate
	return 0, errors.New("gate closed")
}

func TestLoadCancellationIsPromptAndLeaksNothing(t *testing.T) {
	ring, err := NewRing(4, 1<<20)
	require.NoError(t, err)
	defer ring.Close()
	src := &slowSource{name: "slow", size: 64 << 20, gate: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Load(ctx, []Job{WholeFile(src, ring)}, Options{Workers: 4, ChunkSize: 1 << 20, Checksum: ChecksumSHA256})
		done <- err
	}()
	// Cancel once the workers are blocked in reads.
	for deadline := time.Now().Add(10 * time.Second); src.started.Load() < 4; {
		require.False(t, time.Now().After(deadline), "the workers did not start reading")
		time.Sleep(time.Millisecond)
	}
	cancel()
	close(src.gate) // the blocked reads return; the loader must not start new ones
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(2 * time.Second):
		t.Fatal("load did not return within 2 s of cancellation")
	}
	require.Equal(t, ring.Count(), ring.free(), "every ring buffer returned")
}

func TestLoadProgressAndStats(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 3<<20+1, 7)
	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	var seen atomic.Int64
	res, err := Load(context.Background(), []Job{WholeFile(f, NewHostBuffer(make([]byte, f.Size())))},
		Options{ChunkSize: 1 << 20, OnProgress: func(n int64) { seen.Add(n) }})
	require.NoError(t, err)
	require.Equal(t, f.Size(), seen.Load())
	require.Equal(t, 4, res.Chunks)
	require.Greater(t, res.GiBPerS, 0.0)
	require.GreaterOrEqual(t, res.P99Ms, res.P50Ms)
	require.Equal(t, RouteHost, res.Route)
}

// cancellingSource cancels the load's context after serving its first chunk:
// the load must fail, never return success with the rest missing.
type cancellingSource struct {
	*File
	cancel context.CancelFunc
	once   atomic.Bool
}

func (s *cancellingSource) ReadAt(p []byte, off int64) (int, error) {
	n, err := s.File.ReadAt(p, off)
	if s.once.CompareAndSwap(false, true) {
		s.cancel()
	}
	return n, err
}

func TestLoadCancelledBetweenChunksFails(t *testing.T) {
	path := writeRandom(t, t.TempDir(), 4<<20, 8)
	f, err := OpenFile(path, DirectAuto)
	require.NoError(t, err)
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &cancellingSource{File: f, cancel: cancel}
	res, err := Load(ctx, []Job{WholeFile(src, NewHostBuffer(make([]byte, f.Size())))}, Options{Workers: 1, ChunkSize: 1 << 20})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, res)
}

func TestActualRoute(t *testing.T) {
	f := func(routes ...Route) []FileResult {
		out := make([]FileResult, len(routes))
		for i, r := range routes {
			out[i].Route = r
		}
		return out
	}
	for _, tc := range []struct {
		chosen Route
		files  []FileResult
		want   Route
	}{
		{RouteGDS, nil, RouteGDS},
		{RouteGDS, f(RouteGDS, RouteBounce), RouteGDS},
		{RouteGDS, f(RouteBounce, RouteBounce), RouteBounce},
		{RouteRDMA, f(RouteBounce), RouteBounce},
		{RouteHost, f(RouteHost), RouteHost},
	} {
		if got := actualRoute(tc.chosen, tc.files); got != tc.want {
			t.Errorf("actualRoute(%s, %v) = %s, want %s", tc.chosen, tc.files, got, tc.want)
		}
	}
}
