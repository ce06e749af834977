// Command capi is libgdsload.so, gdsload's C ABI, built with
// `go build -buildmode=c-shared` (make python). capi/gdsload.h is its
// contract; the Python package in python/gdsload loads it with ctypes.
//
// The library composes the Go packages (shards/checkpoint,
// shards/iterator, loader, cufile) behind a few calls that take and return
// JSON documents, so adding an option does not change the ABI. Blocking
// work runs as jobs the caller polls, so a Python caller can cancel on
// Ctrl-C. Tensor memory is allocated outside the Go heap (alloc.c) and
// handed out as DLPack views; no Go pointer crosses the ABI.
//
// Like cmd/gdsload, this package is a program: it holds the process-wide
// state a C ABI needs (jobs, iterators, the GPU libraries) in one value
// made when the library loads.
package main

func main() {}
