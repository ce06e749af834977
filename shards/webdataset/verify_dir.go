package webdataset

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/gdsload/gdsload/internal/humanize"
)

// VerifyShards checks every shard m lists, beside it in dir, for size and
// SHA-256 (VerifyShard), calling onProgress, if set, with each shard's
// bytes once checked. The error names every shard that differs or cannot
// be read; cancelling ctx stops between shards.
func VerifyShards(ctx context.Context, dir string, m *Manifest, onProgress func(int64)) error {
	var errs []error
	for _, e := range m.Shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := VerifyShard(filepath.Join(dir, filepath.FromSlash(e.Name)), e); err != nil {
			errs = append(errs, err)
		}
		if onProgress != nil {
			onProgress(e.Bytes)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%d of %s in %s differ from the manifest:\n%w", len(errs), humanize.Count(len(m.Shards), "shard"), dir, err)
	}
	return nil
}

// Bytes is the stored size of every shard listed.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, e := range m.Shards {
		n += e.Bytes
	}
	return n
}
