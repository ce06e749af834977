package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/stats"
	"github.com/gdsload/gdsload/loader"
)

// HostModes are the modes every Linux machine has.
func HostModes() []Mode {
	return []Mode{
		{Name: "posix", Help: "buffered read() loop into a fresh heap buffer of the file's size, as naive code does", Run: runPOSIX},
		{Name: "direct", Help: "O_DIRECT read() loop, one 4 MiB aligned buffer, one request at a time", Run: runDirect},
		{Name: "mmap", Help: "mmap the file and copy it out in 4 MiB pieces", Run: runMmap},
		{Name: "loader", Help: "the gdsload engine into its host ring (gdsio CPUONLY), as `gdsload load --to host` runs it", Run: runLoader(loader.DirectAuto)},
		{Name: "cached-loader", Help: "the same with buffered reads through the page cache, as `gdsload load --direct off`", Run: runLoader(loader.DirectOff)},
	}
}

// measure runs fn and reports its wall and CPU time.
func measure(fn func() (int64, []time.Duration, error)) (Sample, error) {
	u0, s0 := stats.ProcessCPUTime()
	t0 := time.Now()
	n, lat, err := fn()
	wall := time.Since(t0)
	u1, s1 := stats.ProcessCPUTime()
	return Sample{Bytes: n, Wall: wall, CPU: (u1 - u0) + (s1 - s0), Lat: lat}, err
}

const pieceSize = 4 << 20

func runPOSIX(_ context.Context, path string, _ Config) (Sample, error) {
	return measure(func() (int64, []time.Duration, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, nil, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return 0, nil, err
		}
		buf := make([]byte, st.Size())
		lat := make([]time.Duration, 0, (len(buf)+1<<20-1)>>20) // not regrown while timed
		var n int64
		for n < int64(len(buf)) {
			t := time.Now()
			k, err := f.Read(buf[n:min(n+1<<20, int64(len(buf)))])
			lat = append(lat, time.Since(t))
			n += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				return n, lat, err
			}
		}
		return n, lat, nil
	})
}

// withPiece measures fn, which reads into one reused piece buffer
// allocated outside the measurement.
func withPiece(fn func(buf []byte) (int64, []time.Duration, error)) (Sample, error) {
	buf, err := loader.AllocHost(pieceSize)
	if err != nil {
		return Sample{}, err
	}
	defer loader.FreeHost(buf)
	return measure(func() (int64, []time.Duration, error) { return fn(buf) })
}

func runDirect(_ context.Context, path string, _ Config) (Sample, error) {
	return withPiece(func(buf []byte) (int64, []time.Duration, error) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, nil, fmt.Errorf("open %s with O_DIRECT: %w", path, err)
		}
		defer unix.Close(fd)
		var lat []time.Duration
		var n int64
		for {
			t := time.Now()
			k, err := unix.Pread(fd, buf, n)
			if err == unix.EINTR {
				continue
			}
			lat = append(lat, time.Since(t))
			if err != nil {
				return n, lat, fmt.Errorf("direct read %s at offset %d: %w", path, n, err)
			}
			n += int64(k)
			if k < len(buf) {
				return n, lat, nil
			}
		}
	})
}

func runMmap(_ context.Context, path string, _ Config) (Sample, error) {
	return withPiece(func(buf []byte) (int64, []time.Duration, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, nil, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || st.Size() == 0 {
			return 0, nil, err
		}
		m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, nil, fmt.Errorf("mmap %s: %w", path, err)
		}
		defer unix.Munmap(m)
		_ = unix.Madvise(m, unix.MADV_SEQUENTIAL)
		lat := make([]time.Duration, 0, (len(m)+pieceSize-1)/pieceSize)
		for off := 0; off < len(m); off += pieceSize {
			t := time.Now()
			copy(buf, m[off:min(off+pieceSize, len(m))])
			lat = append(lat, time.Since(t))
		}
		return int64(len(m)), lat, nil
	})
}

// runLoader runs the engine as one `gdsload load --to host` does, ring
// allocation included, with the given O_DIRECT mode.
func runLoader(mode loader.DirectMode) func(context.Context, string, Config) (Sample, error) {
	return func(ctx context.Context, path string, cfg Config) (Sample, error) {
		f, err := loader.OpenFile(path, mode)
		if err != nil {
			return Sample{}, err
		}
		defer f.Close()
		return RingLoad(ctx, []loader.Source{f}, cfg)
	}
}

// RingLoad loads srcs into a fresh ring of reused host buffers (two per
// worker), as `gdsload load --to host` does, and measures the load.
func RingLoad(ctx context.Context, srcs []loader.Source, cfg Config) (Sample, error) {
	chunk := loader.EffectiveChunkSize(cfg.ChunkSize, srcs)
	workers := cfg.Workers
	if workers <= 0 {
		workers = loader.DefaultWorkers
	}
	ring, err := loader.NewRing(2*workers, chunk)
	if err != nil {
		return Sample{}, err
	}
	defer ring.Close()
	jobs := make([]loader.Job, len(srcs))
	for i, s := range srcs {
		jobs[i] = loader.WholeFile(s, ring)
	}
	return LoaderRun(ctx, jobs, loader.Options{Workers: workers, ChunkSize: chunk})
}

// LoaderRun runs one load and turns its result into a Sample; GPU modes
// use it with their own destinations.
func LoaderRun(ctx context.Context, jobs []loader.Job, opts loader.Options) (Sample, error) {
	return loaderRun(ctx, jobs, opts, false)
}

// loaderRun is LoaderRun; with gds set, a file that did not take cuFile
// (one cuFile refused to register went through pinned memory) fails the
// run, so that a gds row is never a bounce run.
func loaderRun(ctx context.Context, jobs []loader.Job, opts loader.Options, gds bool) (Sample, error) {
	var mode string
	s, err := measure(func() (int64, []time.Duration, error) {
		res, err := loader.Load(ctx, jobs, opts)
		if err != nil {
			return 0, nil, err
		}
		for _, f := range res.Files {
			if gds && f.Route != loader.RouteGDS {
				return 0, nil, fmt.Errorf("%s did not take gds: %s", f.Name, f.Reason)
			}
		}
		mode = string(res.GDSMode)
		return res.Bytes, res.Latencies, nil
	})
	s.GDSMode = mode
	return s, err
}
