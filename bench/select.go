package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

// ErrUnknownMode reports a mode name no build of gdsload has.
var ErrUnknownMode = errors.New("unknown mode")

// ErrNoModes reports that none of the modes asked for can run here.
var ErrNoModes = errors.New("no mode asked for can run here")

// gpuModes are the GPU modes with what they do, in the words gdsio users
// know, and how they read.
var gpuModes = []struct {
	name, help string
	route      loader.Route
	direct     loader.DirectMode
}{
	{"gds", "cuFileRead from storage straight into GPU memory (gdsio GPUD)", loader.RouteGDS, loader.DirectOn},
	{"bounce", "O_DIRECT reads into pinned host buffers, async copies to the GPU (gdsio CPU_GPU)", loader.RouteBounce, loader.DirectOn},
	{"cached-bounce", "buffered reads (page cache) into pinned buffers, async copies (gdsio CPU_CACHED_GPU)", loader.RouteBounce, loader.DirectOff},
}

// Help lists every mode this build knows, host and GPU, with what it does.
func Help() [][2]string {
	var out [][2]string
	for _, m := range append(HostModes(), RandomMode()) {
		out = append(out, [2]string{m.Name, m.Help})
	}
	for _, g := range gpuModes {
		out = append(out, [2]string{g.name, g.help})
	}
	return out
}

// Selection is the modes a bench of one file or URL runs, and why others
// cannot run here.
type Selection struct {
	Modes []Mode
	// Skipped names modes that cannot run here, with the reason.
	Skipped map[string]string
	release func()
}

// Close releases the GPU libraries the GPU modes share.
func (s *Selection) Close() error {
	if s.release != nil {
		s.release()
		s.release = nil
	}
	return nil
}

// Select picks the modes to run on target, a local path or a URL m serves
// (nil: local paths only):
//   - a local file: every host mode, and the GPU modes on GPU device that
//     work here (the GPU libraries are opened only for a local file);
//   - a URL: the loader mode, reading through m into the host ring; the
//     others need a local file.
//
// names restricts the modes (empty: every mode available, but for those
// that run only when named, as random). A named mode
// that cannot run here is skipped with its reason, as unavailable modes
// are; a name no build knows is an error wrapping ErrUnknownMode. The
// caller must Close the Selection once the modes have run.
func Select(target string, names []string, device int, m *vfs.Mux) (*Selection, error) {
	for _, n := range names {
		if !slices.ContainsFunc(Help(), func(h [2]string) bool { return h[0] == n }) {
			return nil, fmt.Errorf("%w %q; modes: %s", ErrUnknownMode, n, strings.Join(modeNames(), ", "))
		}
	}
	sel := &Selection{Skipped: map[string]string{}}
	var avail []Mode
	if vfs.IsURL(target) {
		if m == nil {
			return nil, fmt.Errorf("bench %s: a URL needs a vfs.Mux to read it", target)
		}
		for _, h := range Help() {
			if h[0] != "loader" {
				sel.Skipped[h[0]] = "needs a local file"
			}
		}
		avail = []Mode{remoteLoader(m)}
	} else {
		gpu, missing, release := GPUModes(device)
		sel.release = release
		avail = append(append(HostModes(), RandomMode()), gpu...)
		for k, v := range missing {
			sel.Skipped[k] = v
		}
	}
	if len(names) == 0 {
		for _, m := range avail {
			if !m.OnlyByName {
				sel.Modes = append(sel.Modes, m)
			}
		}
		return sel, nil
	}
	defer func() {
		if len(sel.Modes) == 0 {
			sel.Close()
		}
	}()
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	for k := range sel.Skipped {
		if !wanted[k] {
			delete(sel.Skipped, k)
		}
	}
	for _, n := range names {
		if i := slices.IndexFunc(avail, func(m Mode) bool { return m.Name == n }); i >= 0 {
			sel.Modes = append(sel.Modes, avail[i])
		}
	}
	if len(sel.Modes) == 0 {
		var why []string
		for _, n := range names {
			why = append(why, "mode "+n+" is not available here: "+sel.Skipped[n])
		}
		return nil, fmt.Errorf("%w (%s): %s", ErrNoModes, target, strings.Join(why, "; "))
	}
	return sel, nil
}

func modeNames() []string {
	var out []string
	for _, h := range Help() {
		out = append(out, h[0])
	}
	return out
}

// remoteLoader is the loader mode for a URL: the engine reading through
// m's FS (an rdmafs client, an object store) into its host ring.
func remoteLoader(m *vfs.Mux) Mode {
	return Mode{Name: "loader", Help: "the gdsload engine reading from the server into its host ring",
		Run: func(ctx context.Context, url string, cfg Config) (Sample, error) {
			files, err := m.OpenAll(ctx, []string{url})
			if err != nil {
				return Sample{}, err
			}
			defer files.Close()
			return RingLoad(ctx, files.Sources(), cfg)
		}}
}

// GPUModes returns the GPU modes usable on device, why the others are not,
// and a function that releases the GPU libraries the modes share once the
// benchmark is done.
func GPUModes(device int) ([]Mode, map[string]string, func()) {
	missing := map[string]string{}
	stack := loader.OpenGPUStack(cufile.Config{})
	release := func() { _ = stack.Close() }
	if _, why, err := loader.SelectGPURoute(stack, device, loader.RouteBounce); err != nil {
		for _, g := range gpuModes {
			missing[g.name] = why
		}
		release()
		return nil, missing, func() {}
	}
	var modes []Mode
	for _, g := range gpuModes {
		if g.route == loader.RouteGDS {
			if _, why, err := loader.SelectGPURoute(stack, device, loader.RouteGDS); err != nil {
				missing[g.name] = why
				continue
			}
		}
		modes = append(modes, gpuMode(stack, device, g.name, g.help, g.route, g.direct))
	}
	return modes, missing, release
}

// gpuMode loads the file into one device allocation on route, as `gdsload
// load --to gpu:N` does; the allocation is made before the timed load.
func gpuMode(stack *loader.GPUStack, device int, name, help string, route loader.Route, direct loader.DirectMode) Mode {
	return Mode{Name: name, Help: help, Run: func(ctx context.Context, file string, cfg Config) (Sample, error) {
		f, err := loader.OpenFile(file, direct)
		if err != nil {
			return Sample{}, err
		}
		defer f.Close()
		workers := max(cfg.Workers, 1)
		srcs := []loader.Source{f}
		chunk := loader.EffectiveChunkSize(cfg.ChunkSize, srcs)
		l, err := loader.OpenTarget(loader.Target{Kind: loader.TargetGPU, Device: device}, loader.WithGPUStack(stack),
			loader.WithRoute(route), loader.WithWorkers(min(workers, loader.MaxWorkers)), loader.WithChunkSize(chunk), loader.WithDirect(direct))
		if err != nil {
			return Sample{}, err
		}
		defer l.Close()
		jobs, err := l.Jobs(srcs)
		if err != nil {
			return Sample{}, err
		}
		return loaderRun(ctx, jobs, loader.Options{Workers: workers, ChunkSize: chunk}, route == loader.RouteGDS)
	}}
}
