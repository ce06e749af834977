package main

import (
	"context"
	"strings"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
)

// isCheckpointPath reports whether p names a file `load` treats as a
// checkpoint in --format auto: a safetensors file, a sharded checkpoint's
// index, or a .npy tensor.
func isCheckpointPath(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".safetensors") || strings.HasSuffix(l, ".safetensors.index.json") || strings.HasSuffix(l, ".npy")
}

// checkpointResult is the JSON of a checkpoint load: the loader's result
// (the digest of each file covers its data region) and the tensors.
type checkpointResult struct {
	*loader.Result
	Checkpoint string `json:"checkpoint"`
	Tensors    int    `json:"tensors"`
}

// loadCheckpoint loads one checkpoint: each file's data region into its own
// allocation on the destination --to names, tensors as views.
func loadCheckpoint(ctx context.Context, path string, t target, mode loader.DirectMode, lopts loader.Options, onAlloc func(int64)) (*checkpointResult, error) {
	ck, err := checkpoint.Open(ctx, path, checkpoint.Options{Direct: mode})
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	onAlloc(ck.Bytes())
	alloc := checkpoint.HostAllocator
	lopts.Reason = "host destination requested"
	if t.kind != "host" {
		c, err := chooseGPU(t, mode)
		if err != nil {
			return nil, err
		}
		lopts.Reason = c.reason
		if c.stack != nil {
			defer c.stack.Close()
			dev, err := c.stack.Runtime.Device(t.device)
			if err != nil {
				return nil, err
			}
			drv, err := c.stack.DriverFor(c.path)
			if err != nil {
				return nil, err
			}
			alloc = checkpoint.GPUAllocator(c.path, loader.GPUConfig{
				Device: dev, ChunkSize: loader.EffectiveChunkSize(lopts.ChunkSize, nil),
				Buffers: max(2, 2*lopts.Workers/max(1, len(ck.Files()))),
			}, drv)
		}
	}
	l, err := ck.Load(ctx, alloc, lopts)
	if err != nil {
		return nil, err
	}
	// GPU destinations hold cuFile handles on the checkpoint's files:
	// free them before the files close.
	defer l.Close()
	return &checkpointResult{Result: l.Result, Checkpoint: ck.Path(), Tensors: len(l.Tensors)}, nil
}
