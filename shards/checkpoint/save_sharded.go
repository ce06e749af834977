package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// Sharded checkpoint defaults and caps.
const (
	// DefaultMaxShardBytes is the tensor bytes per file unless
	// ShardedOptions.MaxShardBytes says otherwise: 5 GB, as the Hugging Face
	// writers' max_shard_size="5GB".
	DefaultMaxShardBytes = 5_000_000_000
	// DefaultShardPrefix names the files: model-00001-of-00002.safetensors
	// and model.safetensors.index.json.
	DefaultShardPrefix = "model"
	// MaxShards bounds the number of files, as the file names' five
	// digits do.
	MaxShards = 99_999
)

// ShardedOptions tune SaveSharded. The zero value means the defaults.
type ShardedOptions struct {
	// MaxShardBytes caps the tensor bytes of one file (default
	// DefaultMaxShardBytes; negative is refused); a tensor larger than
	// that gets a file of its own.
	MaxShardBytes int64
	// Prefix names the files PREFIX-00001-of-0000N.safetensors and
	// PREFIX.safetensors.index.json (default DefaultShardPrefix). It is a
	// plain file name: no slash, NUL or leading dot.
	Prefix string
	// Save is how each file is written (loader.SaveFile's options:
	// O_DIRECT, checksum).
	Save loader.SaveOptions
}

// withDefaults fills the defaults in and refuses values out of range.
func (o ShardedOptions) withDefaults() (ShardedOptions, error) {
	switch {
	case o.MaxShardBytes < 0:
		return o, fmt.Errorf("shard size %d: want at least 1 byte", o.MaxShardBytes)
	case o.MaxShardBytes == 0:
		o.MaxShardBytes = DefaultMaxShardBytes
	}
	if o.Prefix == "" {
		o.Prefix = DefaultShardPrefix
	}
	if strings.ContainsAny(o.Prefix, "/\\\x00") || strings.HasPrefix(o.Prefix, ".") {
		return o, fmt.Errorf("shard prefix %q: want a plain file name", o.Prefix)
	}
	return o, nil
}

// ShardedResult describes a written sharded checkpoint.
type ShardedResult struct {
	// Index is the path of the *.safetensors.index.json written.
	Index string
	// Files are the shards' results, in file order.
	Files []*loader.SaveResult
}

// SaveSharded writes tensors as a sharded checkpoint in dir, as the Hugging
// Face writers lay one out: files PREFIX-00001-of-0000N.safetensors holding
// the tensors in the order given, a new file begun whenever the next tensor
// would take the current one past the shard size, each with metadata as
// its "__metadata__"; then PREFIX.safetensors.index.json with the
// "weight_map" and "metadata" (the metadata given, and "total_size", the
// tensor bytes in all files). Every file is written with
// loader.SaveFile's discipline (never a partial file under a final name)
// and the index last, so a reader that finds the index finds every shard
// it names. It fails before writing anything when a tensor is invalid.
func SaveSharded(ctx context.Context, dir string, tensors []SaveTensor, metadata map[string]string, opts ShardedOptions) (*ShardedResult, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", dir, err)
	}
	specs := make([]safetensors.TensorSpec, len(tensors))
	for i, t := range tensors {
		specs[i] = safetensors.TensorSpec{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape}
	}
	layout, _, err := safetensors.EncodeHeader(specs, metadata)
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", dir, err)
	}
	for _, ti := range layout {
		t := tensors[slicesIndex(tensors, ti.Name)]
		if t.Data == nil || t.Data.Size() != ti.Bytes() {
			return nil, fmt.Errorf("save %s: tensor %q: %s %v needs %d bytes, its data has %d", dir, ti.Name, ti.Dtype, ti.Shape, ti.Bytes(), dataSize(t.Data))
		}
	}
	var groups [][]SaveTensor
	var size int64
	for _, t := range tensors {
		n := t.Data.Size()
		if len(groups) == 0 || (size > 0 && size+n > o.MaxShardBytes) {
			groups = append(groups, nil)
			size = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], t)
		size += n
	}
	if len(groups) == 0 {
		groups = [][]SaveTensor{nil}
	}
	if len(groups) > MaxShards {
		return nil, fmt.Errorf("save %s: %d files at %d bytes each, over the %d the names allow; raise the shard size", dir, len(groups), o.MaxShardBytes, MaxShards)
	}
	res := &ShardedResult{Index: filepath.Join(dir, o.Prefix+".safetensors.index.json")}
	weightMap := map[string]string{}
	var total int64
	for i, g := range groups {
		name := fmt.Sprintf("%s-%05d-of-%05d.safetensors", o.Prefix, i+1, len(groups))
		r, err := SaveSafetensors(ctx, filepath.Join(dir, name), g, metadata, o.Save)
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, r)
		for _, t := range g {
			weightMap[t.Name] = name
			total += t.Data.Size()
		}
	}
	md := map[string]any{"total_size": total}
	for k, v := range metadata {
		if k != "total_size" {
			md[k] = v
		}
	}
	b, err := json.MarshalIndent(map[string]any{"metadata": md, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", res.Index, err)
	}
	if _, err := loader.SaveFile(ctx, res.Index, loader.HostMemory(append(b, '\n')), loader.SaveOptions{Direct: loader.DirectOff}); err != nil {
		return nil, err
	}
	return res, nil
}

func slicesIndex(ts []SaveTensor, name string) int {
	for i, t := range ts {
		if t.Name == name {
			return i
		}
	}
	return -1
}

func dataSize(d loader.SaveSource) int64 {
	if d == nil {
		return 0
	}
	return d.Size()
}
