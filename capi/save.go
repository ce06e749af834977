package main

/*
#include <stdint.h>
static void *gd_addr(uint64_t p) { return (void *)(uintptr_t)p; }
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
)

// saveRequest is gdsload_save's request (gdsload.h).
type saveRequest struct {
	Path     string            `json:"path"`
	Metadata map[string]string `json:"metadata"`
	Tensors  []saveTensor      `json:"tensors"`
	Workers  int               `json:"workers"`
}

type saveTensor struct {
	Name       string  `json:"name"`
	Dtype      string  `json:"dtype"`
	Shape      []int64 `json:"shape"`
	Ptr        uint64  `json:"ptr"`
	Bytes      int64   `json:"bytes"`
	DeviceType int     `json:"device_type"`
	DeviceID   int     `json:"device_id"`
}

// save writes the caller's tensors, in host or device memory it owns, as
// one safetensors file, atomically.
func (l *library) save(ctx context.Context, req saveRequest) ([]byte, error) {
	if req.Path == "" {
		return nil, requestError{"save: no path"}
	}
	tensors := make([]checkpoint.SaveTensor, len(req.Tensors))
	for i, t := range req.Tensors {
		if t.Bytes < 0 || (t.Ptr == 0 && t.Bytes > 0) {
			return nil, requestError{fmt.Sprintf("save %s: tensor %q: %d bytes at address %#x", req.Path, t.Name, t.Bytes, t.Ptr)}
		}
		st := checkpoint.SaveTensor{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape}
		switch t.DeviceType {
		case dlCPU, 3: // kDLCUDAHost: pinned host memory
			var b []byte
			if t.Bytes > 0 {
				b = unsafe.Slice((*byte)(C.gd_addr(C.uint64_t(t.Ptr))), t.Bytes)
			}
			st.Data = loader.HostMemory(b)
		case dlCUDA:
			dev, err := l.device(t.DeviceID)
			if err != nil {
				return nil, fmt.Errorf("save %s: tensor %q on cuda:%d: %w", req.Path, t.Name, t.DeviceID, err)
			}
			st.Data = deviceMemory{dev: dev, ptr: cufile.DevicePtr(t.Ptr), n: t.Bytes}
		default:
			return nil, requestError{fmt.Sprintf("save %s: tensor %q: DLPack device type %d: want CPU (1) or CUDA (2)", req.Path, t.Name, t.DeviceType)}
		}
		tensors[i] = st
	}
	res, err := checkpoint.SaveSafetensors(ctx, req.Path, tensors, req.Metadata, loader.SaveOptions{Workers: req.Workers})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// device returns GPU id through the process's GPU libraries.
func (l *library) device(id int) (*cufile.Device, error) {
	s := l.gpuStack()
	if s.RuntimeErr != nil {
		return nil, s.RuntimeErr
	}
	return s.Runtime.Device(id)
}

// deviceMemory is device memory the caller owns (a CUDA tensor), saved
// by copying it back through host buffers.
type deviceMemory struct {
	dev *cufile.Device
	ptr cufile.DevicePtr
	n   int64
}

func (d deviceMemory) Size() int64 { return d.n }

// ReadBack copies device bytes [off, off+len(p)) into p.
func (d deviceMemory) ReadBack(ctx context.Context, off int64, p []byte) error {
	if off < 0 || off+int64(len(p)) > d.n {
		return fmt.Errorf("bytes [%d, %d) outside a tensor of %d", off, off+int64(len(p)), d.n)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.dev.CopyFromDevice(p, d.ptr+cufile.DevicePtr(off))
}

// PinHost page-locks the host buffers the copies land in.
func (d deviceMemory) PinHost(mem []byte) (func(), error) {
	reg, err := d.dev.RegisterHost(mem)
	if err != nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}
