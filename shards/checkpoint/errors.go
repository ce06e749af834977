package checkpoint

import "errors"

// Sentinel errors. Failures of Open and Load wrap one of these, or the
// error of the format package (shards/safetensors, shards/npy) or of the
// loader, so callers can tell them apart with errors.Is.
var (
	// ErrFormat reports a path that is neither a .safetensors file, a
	// *.safetensors.index.json index, a .npy file, nor a directory holding
	// exactly one checkpoint.
	ErrFormat = errors.New("not a checkpoint")
	// ErrDuplicateTensor reports a tensor name found in more than one file
	// of a sharded checkpoint.
	ErrDuplicateTensor = errors.New("tensor name in more than one shard")
	// ErrWeightMap reports an index whose "weight_map" disagrees with the
	// shards' headers: a listed tensor missing from its shard, or a
	// tensor of a shard listed under another shard or not at all.
	ErrWeightMap = errors.New(`index "weight_map" disagrees with the shards`)
	// ErrNotViewable reports a .npy array whose bytes cannot be viewed as a
	// tensor: big-endian, Fortran order, or a dtype without a safetensors
	// name (float128, complex128, complex256).
	ErrNotViewable = errors.New(".npy array cannot be viewed as a tensor")
	// ErrURLDestination reports a save whose destination is a URL: only
	// local paths are written, never a folder named after the scheme.
	ErrURLDestination = errors.New("destination is a URL; only local paths are written")
)
