package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gdsload/gdsload/loader"
)

// DeviceMap places tensors on GPUs by name prefix, as accelerate's
// device_map does: a tensor goes to the device of the longest prefix its
// name starts with ("" matches every name). Devices are CUDA device
// ordinals of the GPUSet.
type DeviceMap map[string]int

// Device returns the device of the tensor called name, and false when no
// prefix matches.
func (m DeviceMap) Device(name string) (int, bool) {
	best, dev, ok := -1, 0, false
	for p, d := range m {
		if strings.HasPrefix(name, p) && len(p) > best {
			best, dev, ok = len(p), d, true
		}
	}
	return dev, ok
}

// OnGPUs is a checkpoint loaded onto several GPUs.
type OnGPUs struct {
	// Devices is the device each tensor landed on.
	Devices map[string]int
	// Parts hold the bytes: per GPU with a share, in the set's order,
	// the Loaded (whole files) or Fetched (one allocation per tensor,
	// under a DeviceMap) of that GPU.
	Parts []GPUPart
	// Result is each GPU's bytes, route, reason and bandwidth, and the
	// totals over the wall time of the load.
	Result *loader.GPUsResult
	// BytesRead is what was read from storage: headers and data.
	BytesRead int64
}

// GPUPart is one GPU's share of an OnGPUs: Loaded or Fetched is set.
type GPUPart struct {
	Device  int
	Loaded  *Loaded
	Fetched *Fetched
}

// Close frees every GPU's allocations. Calling it again does nothing.
func (o *OnGPUs) Close() error {
	var errs []error
	for _, p := range o.Parts {
		if p.Loaded != nil {
			errs = append(errs, p.Loaded.Close())
		}
		if p.Fetched != nil {
			errs = append(errs, p.Fetched.Close())
		}
	}
	o.Parts = nil
	return errors.Join(errs...)
}

// LoadGPUs loads the checkpoint onto the GPUs of set, every GPU at once
// with its own workers and ring (loader.GPUSet.Run). With m nil, each
// file's data region lands whole on one GPU (Load), the files balanced by
// bytes (loader.PlaceByBytes). With a DeviceMap each tensor lands, in its
// own allocation (Fetch), on the GPU its prefix names; a tensor no prefix
// matches, or a device outside the set, is refused before anything is
// read. A failing GPU fails the load with an error naming it, and
// everything allocated is freed. The caller must Close the OnGPUs.
func (c *Checkpoint) LoadGPUs(ctx context.Context, set *loader.GPUSet, m DeviceMap, lopts loader.Options) (_ *OnGPUs, err error) {
	gpus := set.GPUs()
	if len(gpus) == 0 {
		return nil, fmt.Errorf("checkpoint %s: no GPUs to load onto", c.path)
	}
	index := map[int]int{}
	for i, g := range gpus {
		index[g.Target().Device] = i
	}
	out := &OnGPUs{Devices: map[string]int{}, Parts: make([]GPUPart, len(gpus))}
	defer func() {
		if err != nil {
			err = errors.Join(err, out.Close())
		}
	}()
	files := make([][]int, len(gpus))
	reqs := make([][]Request, len(gpus))
	if m == nil {
		sizes := make([]int64, len(c.files))
		for i, s := range c.files {
			sizes[i] = s.header.FileSize() - s.header.DataOffset
		}
		for fi, b := range loader.PlaceByBytes(sizes, len(gpus)) {
			files[b] = append(files[b], fi)
			for _, t := range c.files[fi].header.Tensors {
				out.Devices[t.Name] = gpus[b].Target().Device
			}
		}
	} else {
		for _, s := range c.files {
			for _, t := range s.header.Tensors {
				d, ok := m.Device(t.Name)
				if !ok {
					return nil, fmt.Errorf("checkpoint %s: tensor %q: no prefix of the device map matches it", c.path, t.Name)
				}
				i, ok := index[d]
				if !ok {
					return nil, fmt.Errorf("checkpoint %s: tensor %q: the device map sends it to GPU %d, not among the GPUs loaded", c.path, t.Name, d)
				}
				reqs[i] = append(reqs[i], Request{Name: t.Name})
				out.Devices[t.Name] = d
			}
		}
	}
	res, err := set.Run(ctx, func(ctx context.Context, i int, g *loader.GPULanding) (*loader.Result, error) {
		p := &out.Parts[i]
		p.Device = g.Target().Device
		o := lopts
		o.Reason = g.Reason()
		switch {
		case len(files[i]) > 0:
			l, err := c.loadFiles(ctx, files[i], Allocator(g.Allocator(len(files[i]))), o)
			if err != nil {
				return nil, err
			}
			p.Loaded = l
			return l.Result, nil
		case len(reqs[i]) > 0:
			f, err := c.Fetch(ctx, reqs[i], Allocator(g.Allocator(len(reqs[i]))), o, FetchOptions{})
			if err != nil {
				return nil, err
			}
			p.Fetched = f
			return f.Result, nil
		}
		return &loader.Result{Route: g.Route(), Reason: g.Reason(), Files: []loader.FileResult{}}, nil
	})
	if err != nil {
		return nil, err
	}
	out.Result = res
	for _, p := range out.Parts {
		switch {
		case p.Loaded != nil:
			out.BytesRead += p.Loaded.BytesRead
		case p.Fetched != nil:
			out.BytesRead += p.Fetched.BytesRead
		}
	}
	if m != nil {
		out.BytesRead += c.HeaderBytes()
	}
	return out, nil
}
