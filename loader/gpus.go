package loader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gdsload/gdsload/cufile"
)

// GPUSet is several GPUs of one process opened as one target (gpu:all,
// gpu:0,2,3): a Landing per GPU over one shared GPU stack, each with its
// own ring of pinned buffers and its own workers, the pinned buffers on
// the GPU's NUMA node. Its loads run on every GPU at once. A GPUSet is
// not safe for concurrent use; Close frees everything it made.
type GPUSet struct {
	gpus      []*GPULanding
	stack     *GPUStack
	ownsStack bool
}

// GPULanding is one GPU of a GPUSet.
type GPULanding struct {
	*Landing
	// NUMANode is the NUMA node of the GPU's PCI slot (sysfs numa_node
	// of the bus id the CUDA runtime gives), -1 when unknown.
	NUMANode int
	// Staging says where the GPU's pinned staging memory is placed, or
	// why it is not placed.
	Staging string
}

// OpenGPUs opens every GPU t names (gpu:all, gpu:N,M,..., or one gpu:N)
// with the auto policy of OpenTarget for each and opts for all; a GPU
// that cannot be used fails the whole set with an error naming it. The
// caller must Close the set.
func OpenGPUs(t Target, opts ...TargetOption) (_ *GPUSet, err error) {
	if t.Kind != TargetGPU {
		return nil, fmt.Errorf("target %s: several GPUs need a gpu target", t)
	}
	var o targetOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	s := &GPUSet{stack: o.stack}
	if s.stack == nil {
		s.stack, s.ownsStack = OpenGPUStack(o.cfg), true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	devs := t.Devices
	switch {
	case t.AllDevices:
		if s.stack.RuntimeErr != nil {
			return nil, fmt.Errorf("gpu:all: %w", s.stack.RuntimeErr)
		}
		n, err := s.stack.Runtime.DeviceCount()
		if err != nil {
			return nil, fmt.Errorf("gpu:all: %w", err)
		}
		devs = make([]int, n)
		for i := range devs {
			devs[i] = i
		}
	case len(devs) == 0:
		devs = []int{t.Device}
	}
	opts = append(slices.Clip(opts), WithGPUStack(s.stack))
	for _, d := range devs {
		l, err := OpenTarget(Target{Kind: TargetGPU, Device: d}, opts...)
		if err != nil {
			return nil, err // names gpu:d
		}
		g := &GPULanding{Landing: l, NUMANode: -1}
		g.placeStaging(o.cfg.Root)
		s.gpus = append(s.gpus, g)
	}
	return s, nil
}

// placeStaging puts the GPU's pinned buffers on its NUMA node, when the
// node is known and the kernel lets this process use it.
func (g *GPULanding) placeStaging(root string) {
	node, err := g.dev.NUMANode(root)
	switch {
	case err != nil:
		g.Staging = fmt.Sprintf("pinned, NUMA node unknown (%v)", err)
	case node < 0:
		g.Staging = "pinned, one NUMA node"
	default:
		g.NUMANode = node
		if err := cufile.CheckHostNode(node); err != nil {
			g.Staging = fmt.Sprintf("pinned, not bound to NUMA node %d (%v)", node, err)
			return
		}
		g.dev = g.dev.OnHostNode(node)
		g.Staging = fmt.Sprintf("pinned on NUMA node %d", node)
	}
}

// GPUs are the set's GPUs, in the order the target named them.
func (s *GPUSet) GPUs() []*GPULanding { return s.gpus }

// Close frees every destination of every GPU, then the GPU stack if the
// set opened it. Calling it again does nothing.
func (s *GPUSet) Close() error {
	var errs []error
	for _, g := range s.gpus {
		errs = append(errs, g.Close())
	}
	s.gpus = nil
	if s.ownsStack && s.stack != nil {
		errs = append(errs, s.stack.Close())
	}
	s.stack = nil
	return errors.Join(errs...)
}

// PlaceByBytes assigns items of the given sizes to n bins so the bins'
// totals are balanced: largest first, each onto the least loaded bin
// (ties: the lowest bin). Any two bins then differ by at most the largest
// item. It returns each item's bin.
func PlaceByBytes(sizes []int64, n int) []int {
	bins := make([]int, len(sizes))
	if n <= 0 {
		return bins
	}
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	load := make([]int64, n)
	for _, i := range order {
		b := 0
		for j := 1; j < n; j++ {
			if load[j] < load[b] {
				b = j
			}
		}
		bins[i] = b
		load[b] += sizes[i]
	}
	return bins
}

// GPUsResult is a load over several GPUs: the totals (wall time, and
// bandwidth over it) and each GPU's own result. Its JSON form is what
// `gdsload load --to gpu:all --json` prints.
type GPUsResult struct {
	Bytes   int64       `json:"bytes"`
	Seconds float64     `json:"seconds"`
	GiBPerS float64     `json:"gib_per_s"`
	GPUs    []GPUResult `json:"gpus"`
	// Placement is, for Load, the index in GPUs of each source's GPU, in
	// the order of the sources; each GPU's Files follow the order of its
	// sources.
	Placement []int `json:"-"`
}

// InSourceOrder returns the file results of a Load in the order of its
// sources.
func (r *GPUsResult) InSourceOrder() []FileResult {
	out := make([]FileResult, len(r.Placement))
	next := make([]int, len(r.GPUs))
	for i, g := range r.Placement {
		out[i] = r.GPUs[g].Files[next[g]]
		next[g]++
	}
	return out
}

// GPUResult is one GPU's share of a load: its bytes, route, reason,
// bandwidth and files (Result), the device and where its staging memory
// sat.
type GPUResult struct {
	Device   int    `json:"device"`
	NUMANode int    `json:"numa_node"`
	Staging  string `json:"staging"`
	*Result
}

// Load places whole files on the GPUs balanced by bytes (PlaceByBytes)
// and loads every GPU's share at once, each with its own workers and
// ring (opts.Workers and ChunkSize default to each landing's). The bytes
// stay in device memory until Close. A failing GPU cancels the others;
// the error names it.
func (s *GPUSet) Load(ctx context.Context, srcs []Source, opts Options) (*GPUsResult, error) {
	sizes := make([]int64, len(srcs))
	for i, src := range srcs {
		sizes[i] = src.Size()
	}
	shares := make([][]Source, len(s.gpus))
	placement := PlaceByBytes(sizes, len(s.gpus))
	for i, b := range placement {
		shares[b] = append(shares[b], srcs[i])
	}
	res, err := s.Run(ctx, func(ctx context.Context, i int, g *GPULanding) (*Result, error) {
		if len(shares[i]) == 0 {
			return &Result{Route: g.Route(), Reason: g.Reason(), Files: []FileResult{}}, nil
		}
		return g.Load(ctx, shares[i], opts)
	})
	if err != nil {
		return nil, err
	}
	res.Placement = placement
	return res, nil
}

// Run calls load for every GPU of the set at once (i indexes GPUs) and
// gathers their results; the totals' time is the wall time of all. The
// first GPU to fail cancels the context of the others, and Run returns
// its error prefixed with the GPU ("gpu:2: ..."), once every load
// returned. Checkpoint loads use it to place their own jobs.
func (s *GPUSet) Run(ctx context.Context, load func(ctx context.Context, i int, g *GPULanding) (*Result, error)) (*GPUsResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := &GPUsResult{GPUs: make([]GPUResult, len(s.gpus))}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for i, g := range s.gpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := load(ctx, i, g)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("gpu:%d: %w", g.Target().Device, err)
					cancel(first)
				}
				mu.Unlock()
				return
			}
			out.GPUs[i] = GPUResult{Device: g.Target().Device, NUMANode: g.NUMANode, Staging: g.Staging, Result: res}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	out.Seconds = time.Since(start).Seconds()
	for _, g := range out.GPUs {
		out.Bytes += g.Bytes
	}
	if out.Seconds > 0 {
		out.GiBPerS = float64(out.Bytes) / gib / out.Seconds
	}
	return out, nil
}
