package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"

	"github.com/gdsload/gdsload/shards/safetensors"
)

// openIndex parses the index at c.path, opens and validates every shard it
// names, and checks that the weight map and the shards' headers agree.
func (c *Checkpoint) openIndex(ctx context.Context, opts Options) error {
	ix, err := safetensors.ParseIndex(c.path)
	if err != nil {
		return err
	}
	for i, p := range ix.FilePaths() {
		s, err := openSafetensors(ctx, p, opts)
		if errors.Is(err, fs.ErrNotExist) {
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
				c.path, name, shard, filepath.Join(filepath.Dir(c.path), filepath.FromSlash(shard)), ErrWeightMap, fix)
		}
	}
	return nil
}
