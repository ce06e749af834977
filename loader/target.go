package loader

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gdsload/gdsload/cufile"
)

// TargetKind says what memory a load lands in.
type TargetKind string

// The target kinds.
const (
	// TargetHost is host memory: a ring of reused buffers for streamed
	// loads, page-aligned allocations for checkpoints.
	TargetHost TargetKind = "host"
	// TargetGPU is device memory on Target.Device; a load fails when
	// that GPU cannot be used.
	TargetGPU TargetKind = "gpu"
	// TargetAuto is device memory on Target.Device when the GPU is
	// usable, host memory otherwise, with the reason recorded.
	TargetAuto TargetKind = "auto"
)

// Target names where a load lands, as "host", "auto", "gpu", "gpu:N",
// "gpu:all" or "gpu:N,M,..." write it (ParseTarget). OpenTarget resolves
// a single GPU or host memory; OpenGPUs resolves several GPUs.
type Target struct {
	Kind   TargetKind
	Device int
	// Devices are the GPUs of a target that names several ("gpu:0,2,3"),
	// in the order written; nil for one GPU. Device is the first.
	Devices []int
	// AllDevices is "gpu:all": every GPU the CUDA runtime sees.
	AllDevices bool
}

// Multi reports whether t names several GPUs (gpu:all or a list).
func (t Target) Multi() bool { return t.AllDevices || len(t.Devices) > 1 }

// ParseTarget reads "host", "auto", "gpu" (device 0), "gpu:N", "gpu:all"
// or a list "gpu:N,M,...".
func ParseTarget(s string) (Target, error) {
	switch {
	case s == "host" || s == "auto":
		return Target{Kind: TargetKind(s)}, nil
	case s == "gpu":
		return Target{Kind: TargetGPU}, nil
	case s == "gpu:all":
		return Target{Kind: TargetGPU, AllDevices: true}, nil
	case strings.HasPrefix(s, "gpu:"):
		var devs []int
		seen := map[int]bool{}
		for _, f := range strings.Split(s[4:], ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 {
				return Target{}, fmt.Errorf("target %q: want host, auto, gpu, gpu:N, gpu:N,M,... or gpu:all with N a device index", s)
			}
			if seen[n] {
				return Target{}, fmt.Errorf("target %q: GPU %d named twice", s, n)
			}
			seen[n] = true
			devs = append(devs, n)
		}
		t := Target{Kind: TargetGPU, Device: devs[0]}
		if len(devs) > 1 {
			t.Devices = devs
		}
		return t, nil
	}
	return Target{}, fmt.Errorf("target %q: want host, auto, gpu, gpu:N, gpu:N,M,... or gpu:all", s)
}

// String writes t as ParseTarget reads it.
func (t Target) String() string {
	switch {
	case t.Kind != TargetGPU:
		return string(t.Kind)
	case t.AllDevices:
		return "gpu:all"
	case len(t.Devices) > 1:
		s := make([]string, len(t.Devices))
		for i, d := range t.Devices {
			s[i] = strconv.Itoa(d)
		}
		return "gpu:" + strings.Join(s, ",")
	}
	return fmt.Sprintf("gpu:%d", t.Device)
}

// Caps of the counts and sizes a load takes. Beyond them a typo would
// exhaust memory or threads before any useful work.
const (
	MaxWorkers   = 1024
	MaxChunkSize = 1 << 30
)

// TargetOption configures OpenTarget. Each option checks its value; a
// value out of range makes OpenTarget fail.
type TargetOption func(*targetOptions) error

type targetOptions struct {
	workers int
	chunk   int64
	direct  DirectMode
	cfg     cufile.Config
	stack   *GPUStack
	route   Route
	profile string // route profile to consult, "" for none
	data    string // a local path of the data, for the profile
}

// WithWorkers sets the number of concurrent reads the destinations are
// sized for (DefaultWorkers; 1 to MaxWorkers): two buffers per worker.
func WithWorkers(n int) TargetOption {
	return func(o *targetOptions) error {
		if n < 1 || n > MaxWorkers {
			return fmt.Errorf("%d workers: want 1 to %d", n, MaxWorkers)
		}
		o.workers = n
		return nil
	}
}

// WithChunkSize sets the chunk size the destinations' buffers hold (a
// multiple of DefaultAlignment up to MaxChunkSize; rounded up further to
// the sources' alignment). 0, the default, leaves it to
// EffectiveChunkSize: DefaultChunkSize, or more for sources that prefer
// larger chunks.
func WithChunkSize(n int64) TargetOption {
	return func(o *targetOptions) error {
		if n < 0 || n > MaxChunkSize || n%DefaultAlignment != 0 {
			return fmt.Errorf("chunk size %d: want a multiple of %d up to %d bytes", n, DefaultAlignment, MaxChunkSize)
		}
		o.chunk = n
		return nil
	}
}

// WithDirect tells the policy how local sources are opened (DirectAuto by
// default): with DirectOff every descriptor is buffered, which cuFile
// cannot read, so a GPU load takes the bounce route from the start.
func WithDirect(mode DirectMode) TargetOption {
	return func(o *targetOptions) error {
		if mode < DirectAuto || mode > DirectOff {
			return fmt.Errorf("direct mode %d: want DirectAuto, DirectOn or DirectOff", mode)
		}
		o.direct = mode
		return nil
	}
}

// WithCuFileConfig sets where the CUDA and cuFile libraries are looked
// for (the zero cufile.Config: the default search).
func WithCuFileConfig(cfg cufile.Config) TargetOption {
	return func(o *targetOptions) error { o.cfg = cfg; return nil }
}

// WithGPUStack shares an open GPU stack (several landings on the libraries
// opened once, as a benchmark's runs do); the caller closes it after the
// landings. By default OpenTarget opens its own and Close closes it.
func WithGPUStack(s *GPUStack) TargetOption {
	return func(o *targetOptions) error { o.stack = s; return nil }
}

// WithRoute insists on a GPU route (RouteGDS or RouteBounce) instead of
// the auto policy: OpenTarget fails when it is impossible.
func WithRoute(r Route) TargetOption {
	return func(o *targetOptions) error {
		if r != RouteGDS && r != RouteBounce {
			return fmt.Errorf("route %q: want gds or bounce", r)
		}
		o.route = r
		return nil
	}
}

// WithRouteProfile has the auto policy consult the route profile at path
// (Calibrate, UpdateRouteProfile; DefaultRouteProfilePath is the node's)
// for the file system holding dataPath, a local file or folder of the
// data the landing loads: when the profile measured that file system
// with the GPU, the faster route is taken, and the reason cites the
// figures and their date. A profile that is absent changes nothing; one
// measured on another host or with other versions of the drivers or
// libraries (StackVersions), or without that pair, is not used, and the
// reason says why. "" for either (the default) consults no profile. A
// route insisted on (WithRoute) is never changed.
func WithRouteProfile(path, dataPath string) TargetOption {
	return func(o *targetOptions) error { o.profile, o.data = path, dataPath; return nil }
}

// Landing is a Target resolved to a route: for a GPU, the CUDA and cuFile
// libraries, the device and, for gds, the cuFile driver are open. It lays
// out sources as jobs (Jobs, Load) and allocates destinations (Allocator);
// Close frees every destination it made and the libraries it opened. A
// Landing is not safe for concurrent use.
type Landing struct {
	target    Target
	route     Route
	reason    string
	opts      targetOptions
	stack     *GPUStack // nil for host memory
	ownsStack bool
	dev       *cufile.Device
	rdmaMem   DeviceMemory
	rdmaErr   error
	frees     []func() error
}

// OpenTarget resolves t with the auto policy:
//   - host: host memory, "host destination requested";
//   - gpu:N: gds when cuFile runs in p2pdma or nvfs mode, else bounce, with
//     the reason the better route was refused (SelectGPURoute), unless a
//     route profile measured the other faster (WithRouteProfile); bounce
//     also when local files are opened without O_DIRECT (WithDirect), as
//     cuFile reads only O_DIRECT descriptors. Without a usable GPU it
//     fails with an error matching cufile.ErrUnavailable that says what
//     is missing;
//   - auto: gpu:N when that works, else host memory with the reason.
//
// A load whose every source lands in device memory by RDMA itself (rdmafs
// over verbs) takes the rdma route instead; Jobs decides that, seeing the
// sources. The caller must Close the Landing.
func OpenTarget(t Target, opts ...TargetOption) (*Landing, error) {
	o := targetOptions{workers: DefaultWorkers}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	l := &Landing{target: t, opts: o}
	switch t.Kind {
	case TargetHost:
		l.route, l.reason = RouteHost, "host destination requested"
		return l, nil
	case TargetGPU, TargetAuto:
	default:
		return nil, fmt.Errorf("target kind %q: want host, gpu or auto", t.Kind)
	}
	if t.Multi() {
		return nil, fmt.Errorf("target %s names several GPUs: open it with OpenGPUs", t)
	}
	if t.Device < 0 {
		return nil, fmt.Errorf("GPU %d: want a device index of 0 or more", t.Device)
	}
	stack, own := o.stack, o.stack == nil
	if own {
		stack = OpenGPUStack(o.cfg)
	}
	want := o.route
	if want == "" {
		want = "auto"
	}
	route, reason, err := SelectGPURoute(stack, t.Device, want)
	if err == nil {
		l.dev, err = stack.Runtime.Device(t.Device)
	}
	if err != nil {
		if own {
			_ = stack.Close()
		}
		if t.Kind == TargetAuto && o.route == "" {
			l.route, l.reason = RouteHost, "auto: "+reason
			return l, nil
		}
		return nil, fmt.Errorf("gpu:%d: %w", t.Device, err)
	}
	if o.route == "" {
		route, reason = adviseRoute(o.profile, o.data, stack, t.Device, route, reason)
	}
	if route == RouteGDS && o.direct == DirectOff && o.route == "" {
		route, reason = RouteBounce, "direct I/O off: cuFile needs O_DIRECT, so page-cache reads go through pinned buffers (gds usable: "+reason+")"
	}
	l.stack, l.ownsStack, l.route, l.reason = stack, own, route, reason
	return l, nil
}

// Target is what the landing resolved.
func (l *Landing) Target() Target { return l.target }

// Route is the route the landing's destinations take: RouteHost,
// RouteGDS, RouteBounce, or RouteRDMA once Jobs found sources that write
// into device memory themselves.
func (l *Landing) Route() Route { return l.route }

// Reason says why Route was chosen and why better routes were refused.
func (l *Landing) Reason() string { return l.reason }

// GPU reports whether the landing is device memory.
func (l *Landing) GPU() bool { return l.stack != nil }

// Device is the GPU of a device landing, nil for host memory.
func (l *Landing) Device() *cufile.Device { return l.dev }

// chunkFor is the chunk size buffers for srcs need.
func (l *Landing) chunkFor(srcs []Source) int64 { return EffectiveChunkSize(l.opts.chunk, srcs) }

// Jobs lays out srcs, whole, as jobs in job order:
//   - host memory: one ring of reused buffers (two per worker) that every
//     source streams through; the bytes are not kept;
//   - a GPU: one device allocation holding every source, each at an offset
//     aligned to 4 KiB (cuFile's fast path wants device offsets aligned
//     like file offsets); the allocation stays until Close.
//
// When every source writes device memory itself (a DeviceBinder that
// binds, such as an rdmafs file over verbs), the GPU landing takes the
// rdma route and the jobs carry the bound sources; if the GPU stack
// cannot help register device memory, they bounce, and Reason says why.
// Each call makes new destinations.
func (l *Landing) Jobs(srcs []Source) ([]Job, error) {
	chunk := l.chunkFor(srcs)
	jobs := make([]Job, len(srcs))
	if l.stack == nil {
		ring, err := NewRing(2*l.opts.workers, chunk)
		if err != nil {
			return nil, err
		}
		l.track(ring.Close)
		for i, s := range srcs {
			jobs[i] = WholeFile(s, ring)
		}
		return jobs, nil
	}
	route := l.route
	if bound, ok := l.bindDevice(srcs); ok {
		srcs, route = bound, RouteRDMA
		l.route, l.reason = RouteRDMA, "rdmafs over verbs: the server writes into registered GPU memory"
	}
	const gpuAlign = 4096
	var size int64
	for i, s := range srcs {
		jobs[i] = Job{Source: s, Length: -1, DestOffset: size}
		size += (s.Size() + gpuAlign - 1) / gpuAlign * gpuAlign
	}
	dst, _, err := l.newGPU(route, size, 2*l.opts.workers, chunk)
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		jobs[i].Dest = dst
	}
	return jobs, nil
}

// Load lays out srcs with Jobs and loads them with opts, recording the
// landing's reason; opts.Workers and ChunkSize default to the landing's.
// The bytes stay in the landing's memory (device memory) until Close; a
// host ring keeps none. When it returns, the destinations hold nothing on
// the sources (cuFile handles are deregistered), so the caller may close
// them before or after the Landing. Callers of Jobs and loader.Load close
// the Landing before the sources instead.
func (l *Landing) Load(ctx context.Context, srcs []Source, opts Options) (*Result, error) {
	jobs, err := l.Jobs(srcs)
	if err != nil {
		return nil, err
	}
	if opts.Workers <= 0 {
		opts.Workers = l.opts.workers
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = l.opts.chunk
	}
	if opts.Reason == "" {
		opts.Reason = l.reason
	}
	defer releaseFiles(jobs)
	return Load(ctx, jobs, opts)
}

// releaseFiles drops what destinations keep on the jobs' descriptors (a
// gds destination's cuFile handles), so the sources may be closed in any
// order after the load: cuFile wants a handle deregistered before its
// descriptor is closed.
func releaseFiles(jobs []Job) {
	for _, j := range jobs {
		r, ok := j.Dest.(FileReleaser)
		fd, isFile := j.Source.(FileDescriptorSource)
		if ok && isFile {
			r.ReleaseFile(fd.Fd())
		}
	}
}

// bindDevice binds every source to the GPU's RDMA memory when all of them
// can land bytes in device memory themselves.
func (l *Landing) bindDevice(srcs []Source) ([]Source, bool) {
	if len(srcs) == 0 {
		return nil, false
	}
	for _, s := range srcs {
		if _, ok := s.(DeviceBinder); !ok {
			return nil, false
		}
	}
	mem, err := l.rdmaMemory()
	if err != nil {
		l.reason += fmt.Sprintf("; RDMA into gpu:%d refused (%v): remote reads bounce through pinned memory", l.target.Device, err)
		return nil, false
	}
	out := make([]Source, len(srcs))
	for i, s := range srcs {
		b, ok := s.(DeviceBinder).BindDevice(mem)
		if !ok {
			return nil, false
		}
		out[i] = b
	}
	return out, true
}

// rdmaMemory opens, once, what the GPU lends RDMA registration: the CUDA
// driver API (dma-buf export, SYNC_MEMOPS) and the runtime's flush.
func (l *Landing) rdmaMemory() (DeviceMemory, error) {
	if l.rdmaMem != nil || l.rdmaErr != nil {
		return l.rdmaMem, l.rdmaErr
	}
	drv, err := cufile.OpenCUDADriver(l.opts.cfg)
	if err == nil {
		var mem *cufile.RDMAMemory
		if mem, err = cufile.NewRDMAMemory(drv, l.dev); err == nil {
			l.rdmaMem = mem
		}
	}
	l.rdmaErr = err
	return l.rdmaMem, err
}

// newGPU allocates a device destination of size bytes on route; its free
// function is also Close's.
func (l *Landing) newGPU(route Route, size int64, buffers int, chunk int64) (GPUDestination, func() error, error) {
	drv, err := l.stack.DriverFor(route)
	if err != nil {
		return nil, nil, err
	}
	d, err := GPUAllocator(route, GPUConfig{Device: l.dev, ChunkSize: chunk, Buffers: max(buffers, 2)}, drv)(size)
	if err != nil {
		return nil, nil, err
	}
	return d, l.track(d.Close), nil
}

// track registers free with Close and returns it made safe to call twice.
func (l *Landing) track(free func() error) func() error {
	f := onceFree(free)
	l.frees = append(l.frees, f)
	return f
}

// Allocator returns an allocator of destinations for loads that keep
// their bytes (a checkpoint's files, each in its own allocation): host
// memory page aligned and pre-touched (AllocHost, in a HostBuffer), or
// device memory on the landing's route. files is how many allocations
// will share the landing's buffer budget (two pinned buffers per worker in
// all, at least two per allocation). Each allocation's free function
// releases it; Close frees whatever is left.
func (l *Landing) Allocator(files int) func(size int64) (Destination, func() error, error) {
	buffers := max(2, 2*l.opts.workers/max(1, files))
	return func(size int64) (Destination, func() error, error) {
		if l.stack == nil {
			if size < 0 || int64(int(size)) != size {
				return nil, nil, fmt.Errorf("host allocation of %d bytes: size out of range", size)
			}
			b, err := AllocHost(int(size))
			if err != nil {
				return nil, nil, err
			}
			return NewHostBuffer(b), l.track(func() error { return FreeHost(b) }), nil
		}
		d, free, err := l.newGPU(l.route, size, buffers, EffectiveChunkSize(l.opts.chunk, nil))
		if err != nil {
			return nil, nil, err
		}
		return d, free, nil
	}
}

// onceFree makes free safe to call twice (by its owner, then by Close).
func onceFree(free func() error) func() error {
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		return free()
	}
}

// Close frees every destination the landing made, newest first, then the
// GPU libraries it opened. Calling it again does nothing.
func (l *Landing) Close() error {
	var first error
	for i := len(l.frees) - 1; i >= 0; i-- {
		if err := l.frees[i](); err != nil && first == nil {
			first = err
		}
	}
	l.frees = nil
	if l.ownsStack && l.stack != nil {
		if err := l.stack.Close(); err != nil && first == nil {
			first = err
		}
	}
	l.stack = nil
	return first
}
