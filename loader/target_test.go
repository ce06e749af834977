package loader

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/cufile"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		bad  bool
	}{
		{in: "host", want: Target{Kind: TargetHost}},
		{in: "auto", want: Target{Kind: TargetAuto}},
		{in: "gpu", want: Target{Kind: TargetGPU}},
		{in: "gpu:3", want: Target{Kind: TargetGPU, Device: 3}},
		{in: "gpu:-1", bad: true},
		{in: "gpu:x", bad: true},
		{in: "cuda", bad: true},
	} {
		got, err := ParseTarget(tc.in)
		if tc.bad {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		again, err := ParseTarget(got.String())
		require.NoError(t, err)
		require.Equal(t, got, again, "String round-trips")
	}
}

// The auto policy: route and reason from the GPU stack, host memory for
// auto without a GPU, an error naming what is missing when a GPU is
// insisted on; every destination made is freed by Close.
func TestOpenTargetPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmds    []string
		target  Target
		opts    []TargetOption
		route   Route
		reason  string
		failure string
	}{
		{name: "host", target: Target{Kind: TargetHost}, route: RouteHost, reason: "host destination requested"},
		{name: "nvfs", cmds: []string{"mode=nvfs"}, target: Target{Kind: TargetGPU}, route: RouteGDS, reason: "cuFile in nvfs mode"},
		{name: "compat", cmds: []string{"mode=compat"}, target: Target{Kind: TargetGPU}, route: RouteBounce, reason: "gds refused: cuFile in compat mode"},
		{name: "auto nvfs", cmds: []string{"mode=nvfs"}, target: Target{Kind: TargetAuto}, route: RouteGDS, reason: "cuFile in nvfs mode"},
		{name: "buffered files", cmds: []string{"mode=nvfs"}, target: Target{Kind: TargetGPU}, opts: []TargetOption{WithDirect(DirectOff)},
			route: RouteBounce, reason: "direct I/O off: cuFile needs O_DIRECT"},
		{name: "bounce insisted", cmds: []string{"mode=nvfs"}, target: Target{Kind: TargetGPU}, opts: []TargetOption{WithRoute(RouteBounce)},
			route: RouteBounce, reason: "bounce asked for"},
		{name: "auto without GPU", cmds: []string{"devices=0"}, target: Target{Kind: TargetAuto}, route: RouteHost, reason: "auto: no GPU"},
		{name: "gpu without GPU", cmds: []string{"devices=0"}, target: Target{Kind: TargetGPU}, failure: "gpu:0: no GPU"},
		{name: "no such GPU", cmds: []string{"mode=nvfs"}, target: Target{Kind: TargetGPU, Device: 7}, failure: "gpu:7: no GPU"},
		{name: "gds refused when insisted", cmds: []string{"fault=driver_open"}, target: Target{Kind: TargetGPU}, opts: []TargetOption{WithRoute(RouteGDS)}, failure: "gds refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withFakeGPU(t, tc.cmds...)
			l, err := OpenTarget(tc.target, append([]TargetOption{WithCuFileConfig(f.Config())}, tc.opts...)...)
			if tc.failure != "" {
				if err == nil {
					l.Close()
				}
				require.ErrorContains(t, err, tc.failure)
				require.ErrorIs(t, err, cufile.ErrUnavailable)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.route, l.Route())
			require.Contains(t, l.Reason(), tc.reason)
			require.Equal(t, tc.route != RouteHost, l.GPU())
			require.NoError(t, l.Close())
			require.NoError(t, l.Close(), "Close twice")
		})
	}
}

func TestTargetOptionsRefuseOutOfRange(t *testing.T) {
	for name, o := range map[string]TargetOption{
		"workers 0":        WithWorkers(0),
		"workers too many": WithWorkers(MaxWorkers + 1),
		"chunk unaligned":  WithChunkSize(1000),
		"chunk too large":  WithChunkSize(2 * MaxChunkSize),
		"direct mode 7":    WithDirect(7),
		"route rdma":       WithRoute(RouteRDMA),
	} {
		_, err := OpenTarget(Target{Kind: TargetHost}, o)
		require.Error(t, err, name)
	}
	_, err := OpenTarget(Target{Kind: "tpu"})
	require.Error(t, err)
}

// Jobs lays files out whole: through one ring on the host, into one
// device allocation at 4 KiB-aligned offsets on a GPU, and the load's
// route is the destination's own.
func TestLandingJobs(t *testing.T) {
	for _, route := range []Route{RouteHost, RouteGDS, RouteBounce} {
		t.Run(string(route), func(t *testing.T) {
			f := withFakeGPU(t, "mode=nvfs")
			dir := t.TempDir()
			var srcs []Source
			var wants []string
			for i, n := range []int{1, 4097, 2<<20 + 333} {
				name := writeRandom(t, dir, n, uint64(40+i))
				wants = append(wants, sha256hex(readFile(t, name)))
				src, err := OpenFile(name, DirectOn)
				require.NoError(t, err)
				defer src.Close()
				srcs = append(srcs, src)
			}
			target := Target{Kind: TargetGPU}
			opts := []TargetOption{WithCuFileConfig(f.Config()), WithWorkers(3), WithChunkSize(1 << 20)}
			switch route {
			case RouteHost:
				target = Target{Kind: TargetHost}
			case RouteBounce:
				opts = append(opts, WithRoute(RouteBounce))
			}
			l, err := OpenTarget(target, opts...)
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()
			jobs, err := l.Jobs(srcs)
			require.NoError(t, err)
			require.Len(t, jobs, len(srcs))
			for i, j := range jobs {
				require.Equal(t, srcs[i], j.Source)
				require.Zero(t, j.DestOffset%4096, "file %d at a 4 KiB boundary", i)
				require.Same(t, jobs[0].Dest, j.Dest, "one destination for every file")
			}
			res, err := l.Load(context.Background(), srcs, Options{Checksum: ChecksumSHA256})
			require.NoError(t, err)
			require.Equal(t, route, res.Route)
			require.Equal(t, l.Reason(), res.Reason)
			for i, fr := range res.Files {
				require.Equal(t, wants[i], fr.SHA256, "file %d, in job order", i)
				require.Equal(t, srcs[i].Name(), fr.Name)
			}
		})
	}
}

// The checkpoint allocator: page-aligned host buffers, or device memory on
// the landing's route; each free is safe to repeat and Close frees what
// is left.
func TestLandingAllocator(t *testing.T) {
	f := withFakeGPU(t, "mode=nvfs")
	for _, target := range []Target{{Kind: TargetHost}, {Kind: TargetGPU}} {
		l, err := OpenTarget(target, WithCuFileConfig(f.Config()))
		require.NoError(t, err)
		alloc := l.Allocator(2)
		a, freeA, err := alloc(10000)
		require.NoError(t, err)
		_, _, err = alloc(1)
		require.NoError(t, err)
		if target.Kind == TargetHost {
			require.Len(t, a.(*HostBuffer).Bytes(), 10000)
		} else {
			require.Equal(t, RouteGDS, a.(Router).Route())
			require.EqualValues(t, 10000, a.(Sized).Len())
		}
		require.NoError(t, freeA())
		require.NoError(t, freeA(), "a second free does nothing")
		require.NoError(t, l.Close())
	}
	require.Zero(t, f.Counter("allocs"), "every device allocation freed")
}

// binderSource lands bytes in device memory itself once bound, as an
// rdmafs file over verbs does; unbound or refused, it cannot.
type binderSource struct {
	*deviceWritingSource
	refuse bool
	bound  atomic.Int64
}

func (b *binderSource) BindDevice(mem DeviceMemory) (DeviceReaderSource, bool) {
	if b.refuse || mem == nil {
		return nil, false
	}
	b.bound.Add(1)
	return b.deviceWritingSource, true
}

// Sources that write device memory themselves take the rdma route once
// bound to the GPU's memory; where binding is refused they bounce.
func TestLandingBindsDeviceSources(t *testing.T) {
	f := withFakeGPU(t, "mode=nvfs")
	name := writeRandom(t, t.TempDir(), 1<<20+77, 5)
	want := sha256hex(readFile(t, name))
	file, err := OpenFile(name, DirectAuto)
	require.NoError(t, err)
	defer file.Close()
	for _, refuse := range []bool{false, true} {
		l, err := OpenTarget(Target{Kind: TargetGPU}, WithCuFileConfig(f.Config()), WithChunkSize(1<<20))
		require.NoError(t, err)
		src := &binderSource{deviceWritingSource: &deviceWritingSource{File: file, dev: l.Device()}, refuse: refuse}
		res, err := l.Load(context.Background(), []Source{src}, Options{Checksum: ChecksumSHA256})
		require.NoError(t, err)
		require.Equal(t, want, res.Files[0].SHA256)
		if refuse {
			require.NotEqual(t, RouteRDMA, res.Route)
			require.Zero(t, src.calls.Load(), "no device writes by a source that could not bind")
		} else {
			require.Equal(t, RouteRDMA, res.Route)
			require.Contains(t, res.Reason, "rdmafs over verbs")
			require.EqualValues(t, 1, src.bound.Load())
			require.Positive(t, src.calls.Load())
		}
		require.NoError(t, l.Close())
	}
}

// A load with no GPU target never opens the GPU libraries.
func TestHostLandingNeedsNoGPU(t *testing.T) {
	l, err := OpenTarget(Target{Kind: TargetHost}, WithCuFileConfig(cufile.Config{}))
	require.NoError(t, err)
	require.False(t, l.GPU())
	require.Nil(t, l.Device())
	_, err = l.Load(context.Background(), nil, Options{})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.False(t, errors.Is(err, cufile.ErrUnavailable))
}

// Probe reports the stack and the route a load would take, as doctor
// prints it.
func TestProbeGPU(t *testing.T) {
	f := withFakeGPU(t, "mode=nvfs")
	s := OpenGPUStack(f.Config())
	r := s.Probe(0)
	require.NoError(t, s.Close())
	require.Equal(t, 1, r.GPUCount)
	require.Equal(t, "gds", r.GPULoad.Path)
	require.Contains(t, r.GPULoad.Reason, "cuFile in nvfs mode")
	require.NotNil(t, r.CuFileProperties)
	require.NoError(t, f.Do("devices=0"))
	s = OpenGPUStack(f.Config())
	r = s.Probe(0)
	require.NoError(t, s.Close())
	require.Equal(t, "none", r.GPULoad.Path)
	require.Contains(t, r.GPULoad.Reason, "no GPU")
	require.Zero(t, f.Counter("driver_refs"))
}
