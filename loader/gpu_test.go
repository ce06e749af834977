package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/stretchr/testify/require"
)

// spanLoad lands a file in dst the way the engine's span path does, with
// several goroutines doing Span, read, Commit.
func spanLoad(t *testing.T, dst Destination, name string, chunk int64, workers int) {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	ctx := context.Background()
	var mu sync.Mutex
	next := int64(0)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				off := next
				next += chunk
				if off >= st.Size() {
					mu.Unlock()
					return
				}
				n := min(chunk, st.Size()-off)
				s, err := dst.Span(ctx, off, n)
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
				if _, err := f.ReadAt(s.Buf, off); err != nil {
					s.Abort()
					errs <- err
					return
				}
				if err := s.Commit(ctx); err != nil {
					errs <- err
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
	require.NoError(t, dst.Flush(ctx))
}

// The bounce path is byte-exact even when copies are slow and the ring is
// only double-buffered: a buffer is reused only after its copy completed.
func TestGPUBounceByteExact(t *testing.T) {
	for _, tc := range []struct {
		buffers int
		delay   string
	}{
		{2, "delay_us=20000"},
		{8, "delay_us=200"},
	} {
		t.Run(fmt.Sprintf("%d-buffers-%s", tc.buffers, tc.delay), func(t *testing.T) {
			f := withFakeGPU(t, tc.delay)
			name := writeRandom(t, t.TempDir(), 6<<20+123, 1)
			want := readFile(t, name)
			dst, err := NewGPUBounceDestination(GPUConfig{
				Device: f.device(t, 0), Size: int64(len(want)), ChunkSize: 1 << 20, Buffers: tc.buffers,
			})
			require.NoError(t, err)
			defer func() { require.NoError(t, dst.Close()) }()
			before := f.Control.Counter("async_bytes")
			spanLoad(t, dst, name, 1<<20, 4)
			require.Equal(t, int64(len(want)), f.Control.Counter("async_bytes")-before, "every byte went through an async copy")
			require.Equal(t, sha256hex(want), sha256hex(readBackAll(t, dst)))
			require.Equal(t, "gpu:0", dst.Kind())

			// Reused for a second load without new pinned memory.
			pinned := f.Control.Counter("pinned")
			spanLoad(t, dst, name, 1<<20, 2)
			require.Equal(t, pinned, f.Control.Counter("pinned"))
			require.Equal(t, sha256hex(want), sha256hex(readBackAll(t, dst)))
		})
	}
}

func TestGPUDirectByteExact(t *testing.T) {
	for _, fault := range []string{"fault=", "fault=short_read"} {
		t.Run(fault, func(t *testing.T) {
			f := withFakeGPU(t, fault)
			name := writeRandom(t, t.TempDir(), 5<<20+777, 2)
			want := readFile(t, name)
			src, err := OpenFile(name, DirectOn)
			require.NoError(t, err)
			defer src.Close()
			dst, err := NewGPUDirectDestination(GPUDirectConfig{
				GPUConfig: GPUConfig{Device: f.device(t, 0), Size: int64(len(want))},
				Driver:    f.driver(t),
			})
			require.NoError(t, err)
			defer func() { require.NoError(t, dst.Close()) }()
			require.True(t, dst.Registered(), "the whole device buffer is registered once")
			ctx := context.Background()
			for off := int64(0); off < int64(len(want)); off += 1 << 20 {
				n := min(1<<20, int64(len(want))-off)
				got, err := dst.ReadFromFile(ctx, src, off, off, n)
				require.NoError(t, err)
				require.Equal(t, n, got)
			}
			require.EqualValues(t, 1, f.Control.Counter("handles"), "one cuFile handle per source")
			require.Equal(t, sha256hex(want), sha256hex(readBackAll(t, dst)))
		})
	}
}

// A byte range starting at an unaligned file offset (a safetensors data
// region) lands at destination offset 0; device addresses are shifted so
// file and device offsets share their alignment.
func TestGPUDirectUnalignedRange(t *testing.T) {
	f := withFakeGPU(t)
	name := writeRandom(t, t.TempDir(), 3<<20, 3)
	all := readFile(t, name)
	const start = 8 + 1000
	want := all[start:]
	src, err := OpenFile(name, DirectOn)
	require.NoError(t, err)
	defer src.Close()
	dst, err := NewGPUDirectDestination(GPUDirectConfig{
		GPUConfig:  GPUConfig{Device: f.device(t, 0), Size: int64(len(want))},
		Driver:     f.driver(t),
		FileOffset: start,
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	require.EqualValues(t, start%4096, uintptr(dst.DevicePtr())%4096, "device address aligned like the file offset")
	res, err := Load(context.Background(), []Job{{Source: src, Offset: start, Length: -1, Dest: dst}},
		Options{Checksum: ChecksumSHA256})
	require.NoError(t, err)
	require.Equal(t, sha256hex(want), res.Files[0].SHA256)
	require.Equal(t, sha256hex(want), sha256hex(readBackAll(t, dst)))
}

// A source without O_DIRECT cannot be registered with cuFile: the gds
// destination bounces it through pinned memory instead of failing.
func TestGPUDirectBufferedSourceBounces(t *testing.T) {
	f := withFakeGPU(t)
	name := writeRandom(t, t.TempDir(), 2<<20+5, 4)
	want := readFile(t, name)
	src, err := OpenFile(name, DirectOff)
	require.NoError(t, err)
	defer src.Close()
	dst, err := NewGPUDirectDestination(GPUDirectConfig{
		GPUConfig: GPUConfig{Device: f.device(t, 0), Size: int64(len(want)), Buffers: 2},
		Driver:    f.driver(t),
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	reads := f.Control.Counter("cufile_reads")
	res, err := Load(context.Background(), []Job{WholeFile(src, dst)}, Options{Checksum: ChecksumSHA256, Workers: 2})
	require.NoError(t, err)
	require.Equal(t, sha256hex(want), res.Files[0].SHA256)
	require.Equal(t, reads, f.Control.Counter("cufile_reads"), "no cuFileRead on a buffered descriptor")
}

// On a second GPU, every cuFile read and copy runs with that GPU current
// (the double refuses reads into another device's memory, as cuFile does).
func TestGPULoadOnSecondGPU(t *testing.T) {
	f := withFakeGPU(t, "devices=2")
	name := writeRandom(t, t.TempDir(), 3<<20+9, 7)
	want := sha256hex(readFile(t, name))
	src, err := OpenFile(name, DirectOn)
	require.NoError(t, err)
	defer src.Close()
	dev := f.device(t, 1)
	gds, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: GPUConfig{Device: dev, Size: src.Size()}, Driver: f.driver(t)})
	require.NoError(t, err)
	defer func() { require.NoError(t, gds.Close()) }()
	bounce, err := NewGPUBounceDestination(GPUConfig{Device: dev, Size: src.Size()})
	require.NoError(t, err)
	defer func() { require.NoError(t, bounce.Close()) }()
	for _, dst := range []Destination{gds, bounce} {
		res, err := Load(context.Background(), []Job{WholeFile(src, dst)}, Options{Checksum: ChecksumSHA256, ChunkSize: 1 << 20})
		require.NoError(t, err)
		require.Equal(t, want, res.Files[0].SHA256)
		require.Equal(t, "gpu:1", dst.Kind())
	}
}

// Full loads through the engine into both GPU paths, several files into
// one destination, digests computed from the bytes read back.
func TestLoadIntoGPU(t *testing.T) {
	for _, path := range []Route{RouteBounce, RouteGDS} {
		t.Run(string(path), func(t *testing.T) {
			f := withFakeGPU(t)
			dir := t.TempDir()
			var jobs []Job
			var total int64
			var wants []string
			sizes := []int{9<<20 + 17, 4096, 1, 3 << 20}
			for i, n := range sizes {
				total += int64(n)
				name := writeRandom(t, dir, n, uint64(10+i))
				wants = append(wants, sha256hex(readFile(t, name)))
				src, err := OpenFile(name, DirectAuto)
				require.NoError(t, err)
				defer src.Close()
				jobs = append(jobs, Job{Source: src, Length: -1, DestOffset: total - int64(n)})
			}
			var dst interface {
				Destination
				Close() error
			}
			var err error
			cfg := GPUConfig{Device: f.device(t, 0), Size: total}
			if path == RouteGDS {
				dst, err = NewGPUDirectDestination(GPUDirectConfig{GPUConfig: cfg, Driver: f.driver(t)})
			} else {
				dst, err = NewGPUBounceDestination(cfg)
			}
			require.NoError(t, err)
			defer func() { require.NoError(t, dst.Close()) }()
			for i := range jobs {
				jobs[i].Dest = dst
			}
			res, err := Load(context.Background(), jobs, Options{Checksum: ChecksumSHA256, Reason: "test"})
			require.NoError(t, err)
			require.Equal(t, total, res.Bytes)
			require.Equal(t, path, res.Route, "the route is the destination's own")
			require.Equal(t, "test", res.Reason)
			for i, fr := range res.Files {
				require.Equal(t, wants[i], fr.SHA256, "file %d", i)
			}
			if path == RouteGDS {
				require.Positive(t, f.Control.Counter("cufile_reads"))
			}
		})
	}
}

func TestGPULoadErrors(t *testing.T) {
	t.Run("read error mid-file", func(t *testing.T) {
		f := withFakeGPU(t, "fault=read_at:5242880")
		name := writeRandom(t, t.TempDir(), 8<<20, 5)
		src, err := OpenFile(name, DirectOn)
		require.NoError(t, err)
		defer src.Close()
		dst, err := NewGPUDirectDestination(GPUDirectConfig{
			GPUConfig: GPUConfig{Device: f.device(t, 0), Size: 8 << 20},
			Driver:    f.driver(t),
		})
		require.NoError(t, err)
		defer func() { require.NoError(t, dst.Close()) }()
		_, err = Load(context.Background(), []Job{WholeFile(src, dst)}, Options{ChunkSize: 1 << 20})
		require.Error(t, err)
		var le *Error
		require.ErrorAs(t, err, &le)
		require.Equal(t, int64(5<<20), le.Offset)
		require.Contains(t, err.Error(), name)
		require.Contains(t, err.Error(), "input/output error")
		require.Contains(t, err.Error(), "cuFileRead")
	})
	t.Run("copy failure", func(t *testing.T) {
		f := withFakeGPU(t)
		name := writeRandom(t, t.TempDir(), 4<<20, 6)
		src, err := OpenFile(name, DirectAuto)
		require.NoError(t, err)
		defer src.Close()
		dst, err := NewGPUBounceDestination(GPUConfig{Device: f.device(t, 0), Size: 4 << 20, ChunkSize: 1 << 20, Buffers: 2})
		require.NoError(t, err)
		defer func() { require.Error(t, dst.Close(), "the copy error stays reported") }()
		require.NoError(t, f.Control.Do("fault=copy"))
		_, err = Load(context.Background(), []Job{WholeFile(src, dst)}, Options{ChunkSize: 1 << 20, Workers: 2})
		require.Error(t, err)
		require.Contains(t, err.Error(), "illegal memory access")
		require.Contains(t, err.Error(), name)
	})
	t.Run("out of device memory", func(t *testing.T) {
		f := withFakeGPU(t, "mem=1048576")
		dev := f.device(t, 0)
		_, err := NewGPUBounceDestination(GPUConfig{Device: dev, Size: 2 << 20})
		require.ErrorIs(t, err, cufile.ErrOutOfMemory)
		require.Contains(t, err.Error(), "needs 2097152 bytes")
		require.Contains(t, err.Error(), "only 1048576 bytes")
		_, err = NewGPUDirectDestination(GPUDirectConfig{GPUConfig: GPUConfig{Device: dev, Size: 2 << 20}, Driver: f.driver(t)})
		require.ErrorIs(t, err, cufile.ErrOutOfMemory)
	})
	t.Run("out of pinned memory", func(t *testing.T) {
		f := withFakeGPU(t, "fault=oom")
		_, err := NewGPUBounceDestination(GPUConfig{Device: f.device(t, 0), Size: 1 << 20})
		require.ErrorIs(t, err, cufile.ErrOutOfMemory)
	})
	t.Run("chunk larger than buffers", func(t *testing.T) {
		f := withFakeGPU(t)
		dst, err := NewGPUBounceDestination(GPUConfig{Device: f.device(t, 0), Size: 4 << 20, ChunkSize: 1 << 20, Buffers: 2})
		require.NoError(t, err)
		defer func() { require.NoError(t, dst.Close()) }()
		_, err = dst.Span(context.Background(), 0, 2<<20)
		require.ErrorContains(t, err, "exceeds its 1048576-byte pinned buffers")
		_, err = dst.Span(context.Background(), 4<<20-10, 20)
		require.ErrorContains(t, err, "outside its 4194304 bytes")
	})
	t.Run("span honours cancellation", func(t *testing.T) {
		f := withFakeGPU(t)
		dst, err := NewGPUBounceDestination(GPUConfig{Device: f.device(t, 0), Size: 4 << 20, ChunkSize: 1 << 20, Buffers: 2})
		require.NoError(t, err)
		defer func() { require.NoError(t, dst.Close()) }()
		ctx, cancel := context.WithCancel(context.Background())
		a, err := dst.Span(ctx, 0, 1<<20)
		require.NoError(t, err)
		b, err := dst.Span(ctx, 1<<20, 1<<20)
		require.NoError(t, err)
		cancel()
		_, err = dst.Span(ctx, 2<<20, 1<<20)
		require.ErrorIs(t, err, context.Canceled)
		a.Abort()
		b.Abort()
	})
}

func TestSelectGPURoute(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.so")
	for _, tc := range []struct {
		name    string
		cmds    []string
		cfg     func(f *fakeGPULibs) cufile.Config
		want    Route
		ask     Route
		device  int
		reason  string
		failure bool
	}{
		{name: "nvfs", cmds: []string{"mode=nvfs"}, want: RouteGDS, reason: "cuFile in nvfs mode"},
		{name: "p2pdma", cmds: []string{"mode=p2pdma"}, want: RouteGDS, reason: "cuFile in p2pdma mode"},
		{name: "compat", cmds: []string{"mode=compat"}, want: RouteBounce, reason: "gds refused: cuFile in compat mode"},
		{name: "compat, gds asked", cmds: []string{"mode=compat"}, ask: RouteGDS, want: RouteGDS, reason: "gds asked for; cuFile in compat mode"},
		{name: "driver open fails", cmds: []string{"fault=driver_open"}, want: RouteBounce,
			reason: "gds refused: cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{name: "driver open fails, gds asked", cmds: []string{"fault=driver_open"}, ask: RouteGDS, failure: true,
			reason: "gds refused: cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{name: "bounce asked", ask: RouteBounce, want: RouteBounce, reason: "bounce asked for"},
		{name: "libcufile missing", want: RouteBounce, reason: "gds refused: libcufile.so.0 not found",
			cfg: func(f *fakeGPULibs) cufile.Config { c := f.Config(); c.CuFile = missing; return c }},
		{name: "no GPU", cmds: []string{"devices=0"}, failure: true, reason: "no GPU: cudaGetDeviceCount failed: no CUDA-capable device"},
		{name: "no such GPU", device: 1, failure: true, reason: "no GPU: GPU 1 does not exist: 1 GPU(s) visible"},
		{name: "libcudart missing", failure: true, reason: "no GPU: libcudart.so not found",
			cfg: func(f *fakeGPULibs) cufile.Config { c := f.Config(); c.CUDART = missing; return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withFakeGPU(t, tc.cmds...)
			cfg := f.Config()
			if tc.cfg != nil {
				cfg = tc.cfg(f)
			}
			s := OpenGPUStack(cfg)
			defer func() { require.NoError(t, s.Close()) }()
			got, reason, err := SelectGPURoute(s, tc.device, tc.ask)
			require.Contains(t, reason, tc.reason)
			if tc.failure {
				require.ErrorIs(t, err, cufile.ErrUnavailable)
				require.Empty(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, _, err := SelectGPURoute(&GPUStack{RuntimeErr: errors.New("x")}, 0, "fast")
	require.ErrorContains(t, err, `GPU route "fast"`)
}

// A gds load says which mode cuFile ran in, and a load in compat mode
// (cuFile's POSIX fallback) is never labelled plain gds.
func TestGDSResultNamesCuFileMode(t *testing.T) {
	for _, mode := range []cufile.Mode{cufile.ModeNVFS, cufile.ModeP2PDMA, cufile.ModeCompat} {
		t.Run(string(mode), func(t *testing.T) {
			f := withFakeGPU(t, "mode="+string(mode))
			name := writeRandom(t, t.TempDir(), 1<<20+5, 3)
			src, err := OpenFile(name, DirectOn)
			require.NoError(t, err)
			defer src.Close()
			dst, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: GPUConfig{Device: f.device(t, 0), Size: src.Size()}, Driver: f.driver(t)})
			require.NoError(t, err)
			defer func() { require.NoError(t, dst.Close()) }()
			require.Equal(t, mode, dst.CuFileMode())
			res, err := Load(context.Background(), []Job{WholeFile(src, dst)}, Options{})
			require.NoError(t, err)
			require.Equal(t, mode, res.GDSMode)
			require.Equal(t, mode, res.Files[0].GDSMode)
			require.Equal(t, "gds ("+string(mode)+")", res.RouteLabel())
		})
	}
	f := withFakeGPU(t)
	name := writeRandom(t, t.TempDir(), 4096, 3)
	src, err := OpenFile(name, DirectOn)
	require.NoError(t, err)
	defer src.Close()
	dst, err := NewGPUBounceDestination(GPUConfig{Device: f.device(t, 0), Size: src.Size()})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	res, err := Load(context.Background(), []Job{WholeFile(src, dst)}, Options{})
	require.NoError(t, err)
	require.Empty(t, res.GDSMode, "no cuFile on the bounce path")
	require.Equal(t, "bounce", res.RouteLabel())
}

// A gds destination's buffer registration is undone in its own device's
// context, whichever device the closing thread has current.
func TestGPUDirectDeregistersOnItsDevice(t *testing.T) {
	f := withFakeGPU(t, "devices=2")
	d0, d1 := f.device(t, 0), f.device(t, 1)
	dst, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: GPUConfig{Device: d1, Size: 1 << 20}, Driver: f.driver(t)})
	require.NoError(t, err)
	require.True(t, dst.Registered())
	require.NoError(t, d0.Do(dst.Close), "closing from a thread with GPU 0 current")
	require.Zero(t, f.Counter("bufreg"))
}

// RequireRoute says whether a load can take a route: gds only in nvfs or
// p2pdma mode, bounce with a GPU, host always.
func TestRequireRoute(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		path Route
		ok   bool
	}{
		{"mode=nvfs", RouteGDS, true},
		{"mode=p2pdma", RouteGDS, true},
		{"mode=compat", RouteGDS, false},
		{"mode=compat", RouteBounce, true},
		{"fault=driver_open", RouteGDS, false},
		{"devices=0", RouteBounce, false},
		{"devices=0", RouteHost, true},
		{"mode=nvfs", "rdma", false},
	} {
		t.Run(tc.cmd+" "+string(tc.path), func(t *testing.T) {
			f := withFakeGPU(t, tc.cmd)
			s := OpenGPUStack(f.Config())
			defer func() { require.NoError(t, s.Close()) }()
			err := RequireRoute(s, 0, tc.path)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

// A job with a lead starts its gds reads at the aligned offset below an
// unaligned Offset, landing the lead bytes before DestOffset; without one,
// cuFile gets an unaligned read. Leads beyond the job's offsets are
// refused.
func TestJobLeadAlignsGDSReads(t *testing.T) {
	f := withFakeGPU(t)
	name := writeRandom(t, t.TempDir(), 64<<10+123, 5)
	want := readFile(t, name)
	src, err := OpenFile(name, DirectOn)
	require.NoError(t, err)
	defer src.Close()
	dst, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: GPUConfig{Device: f.device(t, 0), Size: src.Size()}, Driver: f.driver(t)})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	const off = 5000 // 904 bytes past a 4 KiB boundary
	for _, tc := range []struct {
		lead      int64
		unaligned bool
	}{{off, false}, {off % 4096, false}, {0, true}, {100, true}} {
		before := f.Counter("cufile_unaligned")
		res, err := Load(context.Background(), []Job{{Source: src, Offset: off, Length: -1, Dest: dst, DestOffset: off, Lead: tc.lead}},
			Options{ChunkSize: 16 << 10, Checksum: ChecksumSHA256})
		require.NoError(t, err)
		require.Equal(t, int64(len(want)-off), res.Bytes, "lead bytes are not counted")
		require.Equal(t, sha256hex(want[off:]), res.Files[0].SHA256, "lead bytes are not checksummed")
		got := make([]byte, len(want)-off)
		require.NoError(t, dst.ReadBack(context.Background(), off, got))
		require.Equal(t, want[off:], got)
		require.Equal(t, tc.unaligned, f.Counter("cufile_unaligned") > before, "lead %d", tc.lead)
	}
	for _, lead := range []int64{-1, off + 1} {
		_, err := Load(context.Background(), []Job{{Source: src, Offset: off, Length: 10, Dest: dst, DestOffset: off, Lead: lead}}, Options{})
		require.ErrorContains(t, err, "lead of")
	}
}

// A file that cuFile will not register (NVIDIA's libcufile refuses one on
// tmpfs, whose volume udev does not know) goes through pinned memory: its
// bytes land, and its result says bounce and why, without a gds mode.
func TestGDSFileRefusedByCuFileBounces(t *testing.T) {
	f := withFakeGPU(t, "fault=handle_register")
	reads := f.Control.Counter("cufile_reads") // counts from process start
	name := writeRandom(t, t.TempDir(), 3<<20+5, 21)
	want := sha256hex(readFile(t, name))
	src, err := OpenFile(name, DirectOn)
	require.NoError(t, err)
	defer src.Close()
	dst, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: GPUConfig{Device: f.device(t, 0), Size: src.Size()}, Driver: f.driver(t)})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	res, err := Load(context.Background(), []Job{{Source: src, Length: -1, Dest: dst}}, Options{Checksum: ChecksumSHA256})
	require.NoError(t, err)
	require.Len(t, res.Files, 1)
	fr := res.Files[0]
	require.Equal(t, want, fr.SHA256)
	require.Equal(t, RouteBounce, fr.Route)
	require.Empty(t, fr.GDSMode)
	require.Contains(t, fr.Reason, "cuFileHandleRegister")
	require.Contains(t, fr.Reason, "CU_FILE_INTERNAL_ERROR")
	require.Equal(t, reads, f.Control.Counter("cufile_reads"), "no cuFileRead")
}
