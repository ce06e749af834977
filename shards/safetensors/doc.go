// Package safetensors owns the safetensors checkpoint format: parsing and
// validating a file's header exactly as strictly as the reference
// implementation (huggingface/safetensors) does, writing valid files, reading
// the *.safetensors.index.json of sharded checkpoints, and computing the
// aligned read plan that lets a loader bring a file's whole data region into
// one allocation in one job, with every tensor a view into it.
//
// A file is laid out as
//
//	[8 bytes: N, u64 little-endian][N bytes: UTF-8 JSON header][data region]
//
// where the header maps tensor names to {"dtype", "shape", "data_offsets"}
// (offsets relative to the start of the data region) and may carry a
// "__metadata__" object of string values. The package does no I/O beyond
// the header and knows nothing of loaders or devices.
package safetensors
