package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gdsload/gdsload/bench"
	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/loader"
)

// gpuAlign keeps every file's first byte on a 4 KiB boundary of the device
// allocation, as cuFile's fast path wants device offsets aligned like file
// offsets.
const gpuAlign = 4096

// gpuChoice is what --to gpu[:N] or auto resolved to: a GPU path on an
// open stack (close it when done), or, for auto without a usable GPU, no
// stack and the reason the load stays on the host.
type gpuChoice struct {
	stack  *loader.GPUStack
	path   loader.Route
	reason string
}

// chooseGPU resolves t (not "host"): auto falls back to the host and says
// why; gpu[:N] without a usable GPU is an error that says what is missing.
func chooseGPU(t target, mode loader.DirectMode) (gpuChoice, error) {
	stack := loader.OpenGPUStack(cufile.Config{})
	path, reason, err := loader.SelectGPURoute(stack, t.device, "auto")
	if err == nil {
		if path == loader.RouteGDS && mode == loader.DirectOff {
			// cuFile reads need O_DIRECT descriptors: with --direct off
			// every file would bounce anyway, so say so up front.
			path, reason = loader.RouteBounce, "--direct off: cuFile needs O_DIRECT, so page-cache reads go through pinned buffers (gds usable: "+reason+")"
		}
		return gpuChoice{stack: stack, path: path, reason: reason}, nil
	}
	stack.Close()
	if t.kind == "auto" {
		return gpuChoice{path: loader.RouteHost, reason: "auto: " + reason}, nil
	}
	return gpuChoice{}, fmt.Errorf("--to gpu:%d: %w; use --to host, or run 'gdsload doctor' to see what is missing", t.device, err)
}

// openDestination builds the destination --to asks for. auto takes a GPU
// path when one is usable and says why not otherwise; gpu[:N] insists.
// With rdma set (rdmafs over verbs) remote sources write into the GPU
// memory themselves.
func openDestination(ctx context.Context, t target, mode loader.DirectMode, srcs *openedSources, chunk int64, workers int, rdma bool) (*destination, error) {
	if t.kind == "host" {
		return hostRing(chunk, workers, "host destination requested")
	}
	c, err := chooseGPU(t, mode)
	if err != nil {
		return nil, err
	}
	if c.stack == nil {
		return hostRing(chunk, workers, c.reason)
	}
	if rdma && allRemote(srcs.sources) {
		c.path, c.reason = loader.RouteRDMA, "rdmafs over verbs: the server writes into registered GPU memory"
	}
	d, err := gpuDestination(c.stack, t.device, c.path, c.reason, srcs.sources, loader.EffectiveChunkSize(chunk, srcs.sources), workers)
	if err != nil {
		c.stack.Close()
		return nil, err
	}
	inner := d.close
	d.close = func() { inner(); c.stack.Close() }
	return d, nil
}

// gpuDestination puts all sources into one device allocation, each file at
// a 4 KiB-aligned offset.
func gpuDestination(stack *loader.GPUStack, device int, path loader.Route, reason string, srcs []loader.Source, chunk int64, workers int) (*destination, error) {
	dev, err := stack.Runtime.Device(device)
	if err != nil {
		return nil, err
	}
	offsets := make([]int64, len(srcs))
	var size int64
	for i, s := range srcs {
		offsets[i] = size
		size += (s.Size() + gpuAlign - 1) / gpuAlign * gpuAlign
	}
	drv, err := stack.DriverFor(path)
	if err != nil {
		return nil, err
	}
	dst, err := loader.NewGPUDestination(path, loader.GPUConfig{Device: dev, Size: max(size, 1), ChunkSize: chunk, Buffers: 2 * workers}, drv)
	if err != nil {
		return nil, err
	}
	return &destination{
		path:   path,
		reason: reason,
		jobs: func(srcs []loader.Source) []loader.Job {
			jobs := make([]loader.Job, len(srcs))
			for i, s := range srcs {
				jobs[i] = loader.Job{Source: s, Length: -1, Dest: dst, DestOffset: offsets[i]}
			}
			return jobs
		},
		close: func() { _ = dst.Close() },
	}, nil
}

func gpuModeHelp() [][2]string {
	return [][2]string{
		{"gds", "cuFileRead from storage straight into GPU memory (gdsio GPUD)"},
		{"bounce", "O_DIRECT reads into pinned host buffers, async copies to the GPU (gdsio CPU_GPU)"},
		{"cached-bounce", "buffered reads (page cache) into pinned buffers, async copies (gdsio CPU_CACHED_GPU)"},
	}
}

// gpuBenchModes returns the GPU modes usable on device, why the others are
// not, and a function that releases the GPU libraries once the benchmark
// is done (the modes share them across runs).
func gpuBenchModes(device int) ([]bench.Mode, map[string]string, func()) {
	missing := map[string]string{}
	stack := loader.OpenGPUStack(cufile.Config{})
	release := func() { _ = stack.Close() }
	if _, why, err := loader.SelectGPURoute(stack, device, loader.RouteBounce); err != nil {
		for _, m := range gpuModeHelp() {
			missing[m[0]] = why
		}
		release()
		return nil, missing, func() {}
	}
	var modes []bench.Mode
	if _, why, err := loader.SelectGPURoute(stack, device, loader.RouteGDS); err != nil {
		missing["gds"] = why
	} else {
		modes = append(modes, gpuMode(stack, device, "gds", loader.RouteGDS, loader.DirectOn))
	}
	modes = append(modes,
		gpuMode(stack, device, "bounce", loader.RouteBounce, loader.DirectOn),
		gpuMode(stack, device, "cached-bounce", loader.RouteBounce, loader.DirectOff))
	return modes, missing, release
}

func gpuMode(stack *loader.GPUStack, device int, name string, path loader.Route, direct loader.DirectMode) bench.Mode {
	var help string
	for _, h := range gpuModeHelp() {
		if h[0] == name {
			help = h[1]
		}
	}
	return bench.Mode{Name: name, Help: help, Run: func(ctx context.Context, file string, cfg bench.Config) (bench.Sample, error) {
		f, err := loader.OpenFile(file, direct)
		if err != nil {
			return bench.Sample{}, err
		}
		defer f.Close()
		workers := max(cfg.Workers, 1)
		srcs := []loader.Source{f}
		chunk := loader.EffectiveChunkSize(cfg.ChunkSize, srcs)
		d, err := gpuDestination(stack, device, path, "", srcs, chunk, workers)
		if err != nil {
			return bench.Sample{}, err
		}
		defer d.close()
		s, err := bench.LoaderRun(ctx, d.jobs(srcs), loader.Options{Workers: workers, ChunkSize: chunk})
		if err != nil && errors.Is(err, cufile.ErrUnavailable) {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		return s, err
	}}
}

func allRemote(srcs []loader.Source) bool {
	for _, s := range srcs {
		if _, ok := s.(loader.DeviceReaderSource); !ok {
			return false
		}
	}
	return len(srcs) > 0
}

// useGPUForRDMA gives the rdmafs client what it needs to register memory on
// GPU device: the CUDA driver API (dma-buf export, SYNC_MEMOPS) and the
// runtime (flush of RDMA writes). It returns a function that releases them.
func useGPUForRDMA(r *remoteOptions, device int) (func(), error) {
	cfg := cufile.Config{}
	rt, err := cufile.OpenRuntime(cfg)
	if err != nil {
		return nil, fmt.Errorf("RDMA into gpu:%d: %w; use --transport tcp (the bounce path)", device, err)
	}
	dev, err := rt.Device(device)
	if err != nil {
		return nil, fmt.Errorf("RDMA into gpu:%d: %w; use --transport tcp (the bounce path)", device, err)
	}
	drv, err := cufile.OpenCUDADriver(cfg)
	if err != nil {
		return nil, fmt.Errorf("RDMA into gpu:%d: %w; use --transport tcp (the bounce path)", device, err)
	}
	mem, err := cufile.NewRDMAMemory(drv, dev)
	if err != nil {
		return nil, fmt.Errorf("RDMA into gpu:%d: %w; use --transport tcp (the bounce path)", device, err)
	}
	r.device = mem
	return func() { r.device = nil }, nil
}
