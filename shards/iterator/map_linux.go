package iterator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdsload/gdsload/internal/regular"
	"github.com/gdsload/gdsload/loader"
	"golang.org/x/sys/unix"
)

// MapShard maps Root/name read-only when Direct is DirectOff (the page
// cache is wanted anyway); with O_DIRECT asked or allowed it returns
// errors.ErrUnsupported, and shards are read into buffers. MAP_POPULATE
// brings the whole file in here, in the read stage, so the decoders that
// use the mapping wait for no I/O. The iterator's own DirOpener keeps the
// mappings for later epochs (mapCache).
func (o DirOpener) MapShard(ctx context.Context, name string) ([]byte, func() error, error) {
	if o.Direct != loader.DirectOff {
		return nil, nil, fmt.Errorf("mapping shard %s: direct reads asked: %w", name, errors.ErrUnsupported)
	}
	root, err := o.openRoot(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, fi, err := regular.OpenWith(name, os.O_RDONLY, func(flag int) (*os.File, error) {
		return root.OpenFile(filepath.FromSlash(name), flag, 0)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("opening shard %s in %s: %w%s", name, o.Root, err, mangledHint(name, err))
	}
	defer f.Close() // the mapping outlives the descriptor
	key, keyed := fileKeyOf(fi)
	keyed = keyed && o.maps != nil
	if keyed {
		if b, release, ok := o.maps.get(name, key); ok {
			return b, release, nil
		}
	}
	b, unmap, err := mapFile(f, fi.Size(), true)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping shard %s in %s: %w", name, o.Root, err)
	}
	if keyed {
		unmap = o.maps.add(name, key, b, unmap)
	}
	return b, unmap, nil
}

// defaultMapCacheBytes is how much of the shards' mappings an iterator
// keeps between epochs (mapCache): a quarter of the machine's memory.
func defaultMapCacheBytes() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit) / 4
}

// mapFile maps the size bytes of f read-only, populated (read in) now
// unless not populate. The mapping outlives f. Readers of it must run
// under guardMapped.
func mapFile(f *os.File, size int64, populate bool) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%d bytes do not fit in memory", size)
	}
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, flags)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
