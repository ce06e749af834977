package main

/*
#include <errno.h>
#include "internal.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/cgo"
	"syscall"
	"unsafe"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/cache"
	"github.com/gdsload/gdsload/vfs/rdmafsfs"
	_ "github.com/gdsload/gdsload/vfs/s3fs" // s3:// URLs, in every Mux vfs.New makes
)

// loadRequest is gdsload_load's request (gdsload.h).
type loadRequest struct {
	Path      string `json:"path"`
	Device    string `json:"device"`
	GPUPath   string `json:"gpu_path"`
	Direct    string `json:"direct"`
	Workers   int    `json:"workers"`
	ChunkSize int64  `json:"chunk_size"`
	Token     string `json:"token"`
	cacheRequest
}

// loadResult is gdsload_load's result.
type loadResult struct {
	Checkpoint  string            `json:"checkpoint"`
	Allocations []allocation      `json:"allocations"`
	Tensors     []tensorView      `json:"tensors"`
	Metadata    map[string]string `json:"metadata"`
	Stats       loadStats         `json:"stats"`
}

type allocation struct {
	Handle     uint64 `json:"handle"` // a gdsload_alloc *
	Ptr        uint64 `json:"ptr"`
	Size       int64  `json:"size"`
	DeviceType int    `json:"device_type"`
	DeviceID   int    `json:"device_id"`
	File       string `json:"file"`
}

type tensorView struct {
	Name   string  `json:"name"`
	Dtype  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Alloc  int     `json:"alloc"`
	Offset int64   `json:"offset"`
}

// loadStats is what `gdsload load --json` reports, and where the tensors
// landed.
type loadStats struct {
	*loader.Result
	Checkpoint string       `json:"checkpoint"`
	Tensors    int          `json:"tensors"`
	Device     string       `json:"device"`
	Cache      *cache.Stats `json:"cache,omitempty"` // a cacheRequest's
	BytesRead  int64        `json:"bytes_read"`      // headers and data, from storage
}

// DLPack device types (dlpack.h).
const (
	dlCPU  = 1
	dlCUDA = 2
)

// load reads the checkpoint req names (a path or a URL) into memory that
// outlives the call: one allocation per file, each holding one reference
// that the result hands to the caller. On failure everything allocated is
// freed.
func (l *library) load(ctx context.Context, req loadRequest) ([]byte, error) {
	o, err := parseLoad(req)
	if err != nil {
		return nil, err
	}
	mux, c, err := newMux(req.Token, req.cacheRequest)
	if err != nil {
		return nil, err
	}
	defer mux.Close()
	ck, err := checkpoint.Open(ctx, req.Path, checkpoint.Options{Direct: o.mode, FS: mux})
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	set, err := l.allocations(&o, len(ck.Files()))
	if err != nil {
		return nil, err
	}
	set.cache = c
	loaded, err := ck.Load(ctx, set.alloc, o.lopts)
	if err != nil {
		return nil, err
	}
	return set.result(ck.Path(), loaded, ck.Metadata())
}

// newMux opens paths and URLs for one call; token, when given, is the
// rdmafs secret (else rdmafs clients present GDSLOAD_TOKEN, as the CLI's
// do); cr, the cache remote files are read through (returned, or nil).
func newMux(token string, cr cacheRequest) (*vfs.Mux, *cache.Cache, error) {
	syncEnviron() // credentials and endpoints as the host's environment now says
	c, opts, err := cr.open()
	if err != nil {
		return nil, nil, err
	}
	if token != "" {
		tok, err := rdmafs.CheckToken([]byte(token), "the token")
		if err != nil {
			return nil, nil, requestError{err.Error()}
		}
		opts = append(opts, rdmafsfs.With(rdmafs.WithToken(tok)))
	}
	m, err := vfs.New(opts...)
	return m, c, err
}

// loadOptions is a parsed load request.
type loadOptions struct {
	dev   device
	mode  loader.DirectMode
	route loader.Route // "" for the auto policy
	lopts loader.Options
}

func parseLoad(req loadRequest) (loadOptions, error) {
	var o loadOptions
	var err error
	if o.dev, err = parseDevice(req.Device); err != nil {
		return o, err
	}
	if o.mode, err = parseDirect(req.Direct); err != nil {
		return o, err
	}
	if o.route, err = parseGPUPath(req.GPUPath); err != nil {
		return o, err
	}
	if req.Workers < 0 || req.Workers > loader.MaxWorkers || req.ChunkSize < 0 || req.ChunkSize > loader.MaxChunkSize {
		return o, requestError{fmt.Sprintf("workers %d, chunk_size %d: want 0 to %d workers and chunks up to %d bytes", req.Workers, req.ChunkSize, loader.MaxWorkers, loader.MaxChunkSize)}
	}
	o.lopts = loader.Options{Workers: req.Workers, ChunkSize: req.ChunkSize, Reason: "host destination requested"}
	return o, nil
}

// allocSet makes a load's allocations (host memory, or device memory on
// the route chosen for the GPU) and turns the finished load into the
// result document.
type allocSet struct {
	dev   device
	where string
	alloc checkpoint.Allocator
	list  []*C.gdsload_alloc // one per file, in load order
	gpus  []loader.GPUDestination
	cache *cache.Cache // the request's, for the stats
}

// allocations prepares the allocator for o's device: files is the number
// of files that share the load's pinned buffers. A GPU's route is the
// library's policy (loader.OpenTarget: gds where cuFile runs in p2pdma or
// nvfs mode, else bounce, with the reason), and o.lopts.Reason records it.
func (l *library) allocations(o *loadOptions, files int) (*allocSet, error) {
	set := &allocSet{dev: o.dev, where: "cpu"}
	set.alloc = func(size int64) (loader.Destination, func() error, error) {
		a, err := hostAlloc(size)
		if err != nil {
			return nil, nil, err
		}
		set.list = append(set.list, a)
		dst := loader.NewHostBuffer(unsafe.Slice((*byte)(C.gdsload_alloc_base(a)), size))
		return dst, func() error { C.gdsload_alloc_release(a); return nil }, nil
	}
	if !o.dev.gpu {
		return set, nil
	}
	set.where = fmt.Sprintf("cuda:%d", o.dev.id)
	stack := l.gpuStack()
	topts := []loader.TargetOption{loader.WithGPUStack(stack), loader.WithDirect(o.mode)}
	if o.route != "" {
		topts = append(topts, loader.WithRoute(o.route))
	}
	workers := max(o.lopts.Workers, loader.DefaultWorkers)
	if o.lopts.Workers > 0 {
		topts = append(topts, loader.WithWorkers(o.lopts.Workers))
	}
	// The landing only chooses: the device memory it would allocate is
	// freed with it, while these allocations live as long as their tensors.
	land, err := loader.OpenTarget(loader.Target{Kind: loader.TargetGPU, Device: o.dev.id}, topts...)
	if err != nil {
		return nil, err
	}
	defer land.Close()
	route := land.Route()
	o.lopts.Reason = land.Reason()
	drv, err := stack.DriverFor(route)
	if err != nil {
		return nil, err
	}
	cfg := loader.GPUConfig{
		Device: land.Device(), ChunkSize: loader.EffectiveChunkSize(o.lopts.ChunkSize, nil),
		Buffers: max(2, 2*workers/max(1, files)),
	}
	gpuAlloc := loader.GPUAllocator(route, cfg, drv)
	set.alloc = func(size int64) (loader.Destination, func() error, error) {
		gd, err := gpuAlloc(size)
		if err != nil {
			return nil, nil, err
		}
		h := cgo.NewHandle(gd)
		a := C.gdsload_alloc_owned(C.uint64_t(gd.DevicePtr()), C.uint64_t(size), dlCUDA, C.int32_t(o.dev.id), C.uintptr_t(h))
		if a == nil {
			h.Delete()
			return nil, nil, errors.Join(errors.New("out of host memory for an allocation record"), gd.Close())
		}
		set.list = append(set.list, a)
		set.gpus = append(set.gpus, gd)
		return gd, func() error { C.gdsload_alloc_release(a); return nil }, nil
	}
	return set, nil
}

// result settles the GPU destinations (the memory outlives the load as
// tensors; nothing else should) and describes the load. Its allocations'
// references pass to the caller; on error they are freed.
func (set *allocSet) result(path string, loaded *checkpoint.Loaded, meta map[string]string) ([]byte, error) {
	var errs []error
	for _, g := range set.gpus {
		errs = append(errs, g.Settle())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, loaded.Close())
	}
	res := loadResult{
		Checkpoint: path, Metadata: meta,
		// Empty lists, not null, for a file with no tensors.
		Allocations: make([]allocation, 0, len(loaded.Allocations)),
		Tensors:     make([]tensorView, 0, len(loaded.Tensors)),
		Stats: loadStats{Result: loaded.Result, Checkpoint: path, Tensors: len(loaded.Tensors), Device: set.where,
			Cache: cacheStats(set.cache), BytesRead: loaded.BytesRead},
	}
	for i, a := range loaded.Allocations {
		info := allocation{
			Handle: uint64(uintptr(unsafe.Pointer(set.list[i]))),
			Ptr:    uint64(uintptr(C.gdsload_alloc_base(set.list[i]))),
			Size:   a.Size, DeviceType: dlCPU, File: a.File,
		}
		if set.dev.gpu {
			info.DeviceType, info.DeviceID = dlCUDA, set.dev.id
		}
		res.Allocations = append(res.Allocations, info)
	}
	for _, t := range loaded.Tensors {
		res.Tensors = append(res.Tensors, tensorView{Name: t.Name, Dtype: t.Dtype, Shape: append([]int64{}, t.Shape...), Alloc: t.File, Offset: t.Offset})
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, errors.Join(err, loaded.Close())
	}
	return out, nil
}

// hostAlloc maps size bytes of page-aligned host memory outside the Go
// heap, as one reference-counted allocation.
func hostAlloc(size int64) (*C.gdsload_alloc, error) {
	if size < 0 {
		return nil, fmt.Errorf("host allocation of %d bytes: size out of range", size)
	}
	a, errno := C.gdsload_alloc_host(C.uint64_t(size))
	if a == nil {
		if errno == nil {
			errno = syscall.ENOMEM
		}
		return nil, fmt.Errorf("allocating %d bytes of host memory: %w", size, errno)
	}
	return a, nil
}
