//go:build !linux

package iterator

import (
	"context"
	"errors"
	"fmt"
)

// MapShard is not offered here: shards are read into buffers.
func (o DirOpener) MapShard(ctx context.Context, name string) ([]byte, func() error, error) {
	return nil, nil, fmt.Errorf("mapping shard %s: %w", name, errors.ErrUnsupported)
}

func defaultMapCacheBytes() int64 { return 0 }

// mapFile reads the size bytes of f (no mapping here).
func mapFile(f *os.File, size int64, _ bool) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
