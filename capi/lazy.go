package main

/*
#include "internal.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
)

// abiMinor is GDSLOAD_ABI_MINOR: the additions to ABI version 1 this
// library has (1: lazily opened checkpoints, 2: their shares among the
// ranks of a distributed load). A test checks they agree.
const abiMinor = 2

//export gdsload_abi_minor
func gdsload_abi_minor() C.int32_t { return abiMinor }

// openRequest is gdsload_checkpoint_open's request (gdsload.h).
type openRequest struct {
	Path   string `json:"path"`
	Direct string `json:"direct"`
	Token  string `json:"token"`
	cacheRequest
}

// openResult describes an opened checkpoint from its headers alone.
type openResult struct {
	Handle      uint64            `json:"checkpoint"`
	Checkpoint  string            `json:"path"`
	Tensors     []tensorInfo      `json:"tensors"` // file order
	Metadata    map[string]string `json:"metadata"`
	HeaderBytes int64             `json:"header_bytes"`
}

type tensorInfo struct {
	Name  string  `json:"name"`
	Dtype string  `json:"dtype"`
	Shape []int64 `json:"shape"`
}

// fetchRequest is gdsload_checkpoint_fetch's request.
type fetchRequest struct {
	Handle    uint64      `json:"checkpoint"`
	Device    string      `json:"device"`
	GPUPath   string      `json:"gpu_path"`
	Workers   int         `json:"workers"`
	ChunkSize int64       `json:"chunk_size"`
	MaxGap    int64       `json:"max_gap"`
	Requests  []fetchItem `json:"requests"`
}

// fetchItem is one tensor, whole (Slice null) or a selection: per
// dimension [start, step, count].
type fetchItem struct {
	Name  string     `json:"name"`
	Slice [][3]int64 `json:"slice"`
}

type fetchResult struct {
	Allocations []allocation `json:"allocations"`
	Pieces      []pieceView  `json:"pieces"`
	Stats       fetchStats   `json:"stats"`
}

// pieceView locates one fetched selection in its allocation (index Alloc):
// element i at byte Base + sum(i_d*Strides[d]); Compact when the
// allocation is exactly the selection, row-major.
type pieceView struct {
	Name    string  `json:"name"`
	Dtype   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	Base    int64   `json:"base"`
	Compact bool    `json:"compact"`
	Alloc   int     `json:"alloc"`
}

// fetchStats is a fetch's report: the loader's, without its per-job
// entries (one per range), and the bytes read from storage.
type fetchStats struct {
	Route     string  `json:"path"`
	Reason    string  `json:"reason"`
	Bytes     int64   `json:"bytes"`
	BytesRead int64   `json:"bytes_read"`
	Seconds   float64 `json:"seconds"`
	GiBPerS   float64 `json:"gib_per_s"`
	Ranges    int     `json:"ranges"`
	Device    string  `json:"device"`
	Tensors   int     `json:"tensors"`
}

// openCheckpoint is a checkpoint opened by gdsload_checkpoint_open. Fetches
// hold mu for reading, close for writing, so a close waits for them.
type openCheckpoint struct {
	mu  sync.RWMutex
	ck  *checkpoint.Checkpoint
	mux *vfs.Mux
}

// checkpoints is the table of opened checkpoints.
type checkpoints struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*openCheckpoint
}

func (t *checkpoints) add(c *openCheckpoint) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	if t.m == nil {
		t.m = map[uint64]*openCheckpoint{}
	}
	t.m[t.next] = c
	return t.next
}

func (t *checkpoints) get(id uint64) *openCheckpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *checkpoints) remove(id uint64) *openCheckpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.m[id]
	delete(t.m, id)
	return c
}

var opened checkpoints

// errNoCheckpoint answers a handle that names no opened checkpoint.
var errNoCheckpoint = requestError{"no such checkpoint (closed, or never opened)"}

// use returns the checkpoint opened as id, held for reading (a close waits
// until release is called), or errNoCheckpoint when id names none or a
// close took it meanwhile.
func (t *checkpoints) use(id uint64) (c *openCheckpoint, release func(), err error) {
	c = t.get(id)
	if c == nil {
		return nil, nil, errNoCheckpoint
	}
	c.mu.RLock()
	if t.get(id) == nil {
		c.mu.RUnlock()
		return nil, nil, errNoCheckpoint
	}
	return c, c.mu.RUnlock, nil
}

// openLazy opens a checkpoint reading its headers only.
func (l *library) openLazy(ctx context.Context, req openRequest) ([]byte, error) {
	mode, err := parseDirect(req.Direct)
	if err != nil {
		return nil, err
	}
	mux, _, err := newMux(req.Token, req.cacheRequest)
	if err != nil {
		return nil, err
	}
	ck, err := checkpoint.Open(ctx, req.Path, checkpoint.Options{Direct: mode, FS: mux})
	if err != nil {
		return nil, errors.Join(err, mux.Close())
	}
	res := openResult{Checkpoint: ck.Path(), Metadata: ck.Metadata(), HeaderBytes: ck.HeaderBytes(), Tensors: []tensorInfo{}}
	for _, f := range ck.Files() {
		for _, t := range f.Tensors {
			res.Tensors = append(res.Tensors, tensorInfo{Name: t.Name, Dtype: t.Dtype, Shape: append([]int64{}, t.Shape...)})
		}
	}
	res.Handle = opened.add(&openCheckpoint{ck: ck, mux: mux})
	out, err := json.Marshal(res)
	if err != nil {
		return nil, errors.Join(err, closeLazy(res.Handle))
	}
	return out, nil
}

// closeLazy closes an opened checkpoint once its fetches ended.
func closeLazy(id uint64) error {
	c := opened.remove(id)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.ck.Close(), c.mux.Close())
}

// fetch reads the requests' bytes into memory that outlives the call: one
// allocation per request, each holding one reference for the caller.
func (l *library) fetch(ctx context.Context, req fetchRequest) ([]byte, error) {
	c, release, err := opened.use(req.Handle)
	if err != nil {
		return nil, err
	}
	defer release()
	o, err := parseLoad(loadRequest{Device: req.Device, GPUPath: req.GPUPath, Workers: req.Workers, ChunkSize: req.ChunkSize})
	if err != nil {
		return nil, err
	}
	if req.MaxGap < 0 {
		return nil, requestError{fmt.Sprintf("max_gap %d: want 0 (the default) or more bytes", req.MaxGap)}
	}
	reqs := make([]checkpoint.Request, len(req.Requests))
	for i, r := range req.Requests {
		reqs[i].Name = r.Name
		if r.Slice != nil {
			reqs[i].Slice = make([]safetensors.DimSlice, len(r.Slice))
			for d, s := range r.Slice {
				reqs[i].Slice[d] = safetensors.DimSlice{Start: s[0], Step: s[1], Count: s[2]}
			}
		}
	}
	set, err := l.allocations(&o, len(reqs))
	if err != nil {
		return nil, err
	}
	f, err := c.ck.Fetch(ctx, reqs, set.alloc, o.lopts, checkpoint.FetchOptions{MaxGap: req.MaxGap})
	if err != nil {
		if errors.Is(err, checkpoint.ErrNoTensor) {
			return nil, requestError{err.Error()}
		}
		return nil, err
	}
	return set.fetchResult(f)
}

// fetchResult settles the GPU destinations and describes the fetch; the
// allocations' references pass to the caller, or are freed on error.
func (set *allocSet) fetchResult(f *checkpoint.Fetched) ([]byte, error) {
	var errs []error
	for _, g := range set.gpus {
		errs = append(errs, g.Settle())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	res := fetchResult{
		Allocations: make([]allocation, 0, len(f.Pieces)),
		Pieces:      make([]pieceView, 0, len(f.Pieces)),
		Stats: fetchStats{Route: string(f.Result.Route), Reason: f.Result.Reason, Bytes: f.Result.Bytes, BytesRead: f.BytesRead,
			Seconds: f.Result.Seconds, GiBPerS: f.Result.GiBPerS, Ranges: len(f.Result.Files), Device: set.where, Tensors: len(f.Pieces)},
	}
	for i, p := range f.Pieces {
		info := allocation{
			Handle: uint64(uintptr(unsafe.Pointer(set.list[i]))),
			Ptr:    uint64(uintptr(C.gdsload_alloc_base(set.list[i]))),
			Size:   p.Plan.Size, DeviceType: dlCPU, File: p.Name,
		}
		if set.dev.gpu {
			info.DeviceType, info.DeviceID = dlCUDA, set.dev.id
		}
		res.Allocations = append(res.Allocations, info)
		res.Pieces = append(res.Pieces, pieceView{Name: p.Name, Dtype: p.Dtype, Shape: p.Plan.Shape, Strides: p.Plan.Strides,
			Base: p.Plan.Base, Compact: p.Plan.Compact, Alloc: i})
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return out, nil
}

//export gdsload_checkpoint_open
func gdsload_checkpoint_open(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.openLazy)
}

//export gdsload_checkpoint_fetch
func gdsload_checkpoint_fetch(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.fetch)
}

//export gdsload_checkpoint_close
func gdsload_checkpoint_close(id C.uint64_t) { _ = closeLazy(uint64(id)) }
