package main

import (
	"sync"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/loader"
)

// library is the process-wide state behind the C ABI.
type library struct {
	jobs      jobs
	iterators iterators

	gpuOnce sync.Once
	gpu     *loader.GPUStack
}

// gpuStack opens the GPU libraries the first time a call needs them and
// keeps them for the life of the process: device memory handed out as
// tensors must stay valid, and opening them again per load costs time.
func (l *library) gpuStack() *loader.GPUStack {
	l.gpuOnce.Do(func() { l.gpu = loader.OpenGPUStack(cufile.Config{}) })
	return l.gpu
}

// lib is the library's state, made when the shared object loads.
var lib = &library{}
