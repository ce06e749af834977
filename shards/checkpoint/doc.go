// Package checkpoint owns loading model checkpoints through the loader: a
// single .safetensors file, a sharded checkpoint described by a
// *.safetensors.index.json (its "weight_map"), or a .npy file holding one
// array.
//
// Open validates every file's header (and, for a sharded checkpoint, that
// the index and the shards agree on which tensor lives where) before any
// memory is allocated. Load then reads each file's data region in one
// loader job into one destination allocation, all files in one load so they
// share the loader's workers. A data region starts at an unaligned file
// offset (8 + header length for safetensors), so each read starts at that
// offset rounded down to the I/O alignment: the allocation keeps those few
// header bytes as head slack, and every byte's allocation offset equals its
// file offset modulo the alignment, which keeps O_DIRECT and cuFile reads on
// their aligned fast paths. Tensors are views into the allocations: name,
// dtype, shape, allocation and byte offset; nothing is copied.
//
// The package knows the formats only through shards/safetensors and
// shards/npy, and memory only through the Allocator its caller passes: host
// memory (HostAllocator) or a GPU destination from package loader.
package checkpoint
