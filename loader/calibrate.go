package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gdsload/gdsload/cufile"
)

// Defaults and caps of a calibration (Calibrate): each route reads
// DefaultCalibrateBytes of a sample file DefaultCalibrateRounds times per
// pair of a file system and a GPU, which takes well under a second per
// pair at NVMe speeds.
const (
	DefaultCalibrateBytes  = 64 << 20
	MinCalibrateBytes      = 1 << 20
	MaxCalibrateBytes      = 4 << 30
	DefaultCalibrateRounds = 3
	MaxCalibrateRounds     = 20
)

// CalibrateOption configures Calibrate. Each option checks its value; a
// value out of range makes Calibrate fail.
type CalibrateOption func(*calibrateOptions) error

type calibrateOptions struct {
	bytes  int64
	rounds int
}

// WithCalibrateBytes sets how much of the sample each read moves
// (DefaultCalibrateBytes; a multiple of DefaultAlignment from
// MinCalibrateBytes to MaxCalibrateBytes). A sample file smaller than
// that is read whole.
func WithCalibrateBytes(n int64) CalibrateOption {
	return func(o *calibrateOptions) error {
		if n < MinCalibrateBytes || n > MaxCalibrateBytes || n%DefaultAlignment != 0 {
			return fmt.Errorf("calibration reads of %d bytes: want a multiple of %d from %d to %d", n, DefaultAlignment, MinCalibrateBytes, MaxCalibrateBytes)
		}
		o.bytes = n
		return nil
	}
}

// WithCalibrateRounds sets how many times each route reads the sample per
// pair (DefaultCalibrateRounds; 1 to MaxCalibrateRounds); the figure is
// the median.
func WithCalibrateRounds(n int) CalibrateOption {
	return func(o *calibrateOptions) error {
		if n < 1 || n > MaxCalibrateRounds {
			return fmt.Errorf("%d calibration rounds: want 1 to %d", n, MaxCalibrateRounds)
		}
		o.rounds = n
		return nil
	}
}

// Calibrate measures, for each pair of a file system holding one of paths
// and a GPU of stack, how fast gds and bounce read into that GPU, and
// returns the profile (UpdateRouteProfile writes it; WithRouteProfile
// has the auto policy use it). A path that is a file is read, from its
// start; in a folder a scratch file is written, read and removed. Paths
// on one file system are measured once, through the first of them. Reads
// use O_DIRECT where the file system takes it, so they come from the
// drive, not the page cache; the routes alternate, rounds times, and each
// figure is the median. A route that fails on a pair is recorded with the
// error, and the other one is the faster. Without a usable GPU it fails
// with an error matching cufile.ErrUnavailable.
func Calibrate(ctx context.Context, stack *GPUStack, paths []string, opts ...CalibrateOption) (*RouteProfile, error) {
	o := calibrateOptions{bytes: DefaultCalibrateBytes, rounds: DefaultCalibrateRounds}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("calibration: no path to measure")
	}
	if stack.RuntimeErr != nil {
		return nil, fmt.Errorf("calibration: no GPU: %w", stack.RuntimeErr)
	}
	gpus, err := stack.Runtime.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("calibration: no GPU: %w", err)
	}
	if gpus == 0 {
		return nil, fmt.Errorf("calibration: no GPU visible (%w)", cufile.ErrUnavailable)
	}
	host, _ := os.Hostname()
	p := &RouteProfile{Format: routeProfileFormat, Host: host, Stack: stack.Versions()}
	var seen []FileSystem
	for _, path := range paths {
		fsys, err := FileSystemOf(path)
		if err != nil {
			return nil, fmt.Errorf("calibration: %w", err)
		}
		if slices.ContainsFunc(seen, fsys.Same) {
			continue
		}
		seen = append(seen, fsys)
		pairs, err := calibrateFileSystem(ctx, stack, gpus, path, fsys, o)
		if err != nil {
			return nil, err
		}
		p.Pairs = append(p.Pairs, pairs...)
	}
	return p, nil
}

// calibrateFileSystem measures fsys, through path, with every GPU.
func calibrateFileSystem(ctx context.Context, stack *GPUStack, gpus int, path string, fsys FileSystem, o calibrateOptions) ([]RoutePair, error) {
	sample, n, cleanup, err := calibrationSample(path, o.bytes)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var pairs []RoutePair
	for dev := 0; dev < gpus; dev++ {
		m := RoutePair{FileSystem: fsys, GPU: dev, Sample: sample, Bytes: n, Rounds: o.rounds}
		figs, err := measureRoutes(ctx, stack, dev, sample, n, o.rounds)
		if err != nil {
			return nil, err
		}
		m.GDS, m.Bounce = figs[0], figs[1]
		m.Faster = faster(m.GDS, m.Bounce)
		m.MeasuredAt = time.Now().UTC().Truncate(time.Second)
		pairs = append(pairs, m)
	}
	return pairs, nil
}

// calibrationRoutes are the routes measured, in the order of a figure
// slice.
var calibrationRoutes = [2]Route{RouteGDS, RouteBounce}

// measureRoutes reads n bytes of sample into GPU dev through gds and
// bounce, rounds times each, alternating which goes first, and returns
// their figures (gds, bounce). Only a cancelled ctx is an error: a route
// that cannot be set up or fails is a figure with an error.
func measureRoutes(ctx context.Context, stack *GPUStack, dev int, sample string, n int64, rounds int) ([2]RouteFigure, error) {
	var figs [2]RouteFigure
	var runs [2]*routeRun
	for i, r := range calibrationRoutes {
		run, err := newRouteRun(stack, dev, r, sample, n)
		if err != nil {
			figs[i].Error = err.Error()
			continue
		}
		defer run.close()
		runs[i] = run
	}
	var rates [2][]float64
	for round := 0; round < rounds; round++ {
		for k := range 2 {
			i := (k + round) % 2
			if runs[i] == nil || figs[i].Error != "" {
				continue
			}
			if err := ctx.Err(); err != nil {
				return figs, err
			}
			rate, err := runs[i].read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return figs, ctx.Err()
				}
				figs[i].Error = err.Error()
				continue
			}
			rates[i] = append(rates[i], rate)
		}
	}
	for i := range figs {
		if figs[i].Error == "" {
			figs[i].GiBPerS = median(rates[i])
		}
	}
	return figs, nil
}

// routeRun is one route set up for repeated reads of a sample into one
// device allocation.
type routeRun struct {
	route   Route
	landing *Landing
	dst     Destination
	src     *File
	n       int64
}

func newRouteRun(stack *GPUStack, dev int, route Route, sample string, n int64) (*routeRun, error) {
	l, err := OpenTarget(Target{Kind: TargetGPU, Device: dev}, WithGPUStack(stack), WithRoute(route))
	if err != nil {
		return nil, err
	}
	dst, _, err := l.Allocator(1)(n)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	src, err := OpenFile(sample, DirectAuto)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	return &routeRun{route: route, landing: l, dst: dst, src: src, n: n}, nil
}

// read loads the sample once and returns its bandwidth in GiB/s; a load
// that took another route than the run's (cuFile refusing the file) is
// an error saying why.
func (r *routeRun) read(ctx context.Context) (float64, error) {
	jobs := []Job{{Source: r.src, Length: r.n, Dest: r.dst}}
	res, err := Load(ctx, jobs, Options{Reason: "calibration"})
	releaseFiles(jobs)
	if err != nil {
		return 0, err
	}
	if f := res.Files[0]; f.Route != r.route {
		return 0, fmt.Errorf("took %s: %s", f.Route, f.Reason)
	}
	return res.GiBPerS, nil
}

func (r *routeRun) close() {
	_ = r.landing.Close()
	_ = r.src.Close()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// calibrationSample is what calibration reads on path's file system:
// path itself when it is a file (up to n bytes of it), else a scratch
// file of n bytes written in the folder path, which cleanup removes.
func calibrationSample(path string, n int64) (sample string, size int64, cleanup func(), err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", 0, nil, fmt.Errorf("calibration: %w", err)
	}
	if st.Mode().IsRegular() {
		if st.Size() == 0 {
			return "", 0, nil, fmt.Errorf("calibration: %s is empty: give a larger file, or a folder to write a scratch file in", path)
		}
		return path, min(st.Size(), n), func() {}, nil
	}
	if !st.IsDir() {
		return "", 0, nil, fmt.Errorf("calibration: %s is neither a file nor a folder", path)
	}
	f, err := os.CreateTemp(path, ".gdsload-calibrate-*")
	if err != nil {
		return "", 0, nil, fmt.Errorf("calibration: no scratch file in %s (%w): give a file on that file system instead", path, err)
	}
	cleanup = func() { _ = os.Remove(f.Name()) }
	if err := writeScratch(f, n); err != nil {
		f.Close()
		cleanup()
		return "", 0, nil, fmt.Errorf("calibration: writing scratch file %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", 0, nil, fmt.Errorf("calibration: writing scratch file %s: %w", f.Name(), err)
	}
	return f.Name(), n, cleanup, nil
}

// writeScratch fills f with n bytes that do not compress and syncs it, so
// that direct reads come from the drive.
func writeScratch(f *os.File, n int64) error {
	buf := make([]byte, 1<<20)
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= len(buf); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for k := range 8 {
			buf[i+k] = byte(x >> (8 * k))
		}
	}
	for off := int64(0); off < n; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), n-off)]
		b[0] = byte(off >> 20) // no two MiB alike
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
	}
	return f.Sync()
}
