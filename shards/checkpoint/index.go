package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
)

// indexMetadata gives an index's "metadata" as strings: strings as they
// are, other values (numbers such as total_size) in their JSON form.
func indexMetadata(md map[string]any) map[string]string {
	if md == nil {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = string(b)
	}
	return out
}

// openIndex parses the index at c.path, opens and validates every shard it
// names, and checks that the weight map and the shards' headers agree.
func (c *Checkpoint) openIndex(ctx context.Context, opts Options) error {
	b, err := opts.FS.ReadFile(ctx, c.path, safetensors.MaxIndexSize)
	if err != nil {
		return &safetensors.Error{Path: c.path, Offset: -1, Kind: safetensors.ErrRead, Err: err}
	}
	ix, err := safetensors.DecodeIndex(b, c.path)
	if err != nil {
		return err
	}
	c.metadata = indexMetadata(ix.Metadata)
	dir := vfs.Dir(c.path)
	for i, name := range ix.Files {
		s, err := openSafetensors(ctx, vfs.Join(dir, name), opts)
		if notExist(err) {
			return fmt.Errorf("checkpoint %s: shard %q listed in the weight_map is missing: %w; download it again or regenerate the index", c.path, ix.Files[i], err)
		}
		if err != nil {
			return fmt.Errorf("checkpoint %s: shard %q: %w", c.path, ix.Files[i], err)
		}
		c.files = append(c.files, s)
	}
	return c.checkWeightMap(ix)
}

// checkWeightMap reports the first disagreement between the weight map and
// the shards, in shard and tensor order so the message is deterministic.
func (c *Checkpoint) checkWeightMap(ix *safetensors.Index) error {
	fix := "regenerate the index from the shards, or re-export the checkpoint"
	seen := make(map[string]string, len(ix.WeightMap)) // tensor -> shard holding it
	for i, s := range c.files {
		shard := ix.Files[i]
		for _, t := range s.header.Tensors {
			if other, dup := seen[t.Name]; dup {
				return fmt.Errorf("checkpoint %s: tensor %q is in shard %q and in shard %q: %w; a sharded checkpoint must hold each tensor once, %s",
					c.path, t.Name, other, shard, ErrDuplicateTensor, fix)
			}
			seen[t.Name] = shard
			listed, ok := ix.WeightMap[t.Name]
			if !ok {
				return fmt.Errorf("checkpoint %s: tensor %q is in shard %q but the weight_map does not list it: %w; %s",
					c.path, t.Name, shard, ErrWeightMap, fix)
			}
			if listed != shard {
				return fmt.Errorf("checkpoint %s: tensor %q is in shard %q but the weight_map maps it to %q: %w; %s",
					c.path, t.Name, shard, listed, ErrWeightMap, fix)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ix.WeightMap)) {
		if _, ok := seen[name]; !ok {
			shard := ix.WeightMap[name]
			return fmt.Errorf("checkpoint %s: the weight_map maps tensor %q to shard %q, which has no such tensor (%s): %w; %s",
				c.path, name, shard, vfs.Join(vfs.Dir(c.path), shard), ErrWeightMap, fix)
		}
	}
	return nil
}
