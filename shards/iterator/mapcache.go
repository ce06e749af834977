package iterator

import (
	"os"
	"sync"
	"syscall"
)

// mapCache keeps the mappings of shard files between epochs, so that an
// epoch after the first maps (and later unmaps) nothing it mapped before.
// Mapping is not free even from the page cache: on bench-iterate's
// incompressible shards, MAP_POPULATE and munmap of every shard took a
// sizeable share of an epoch's CPU, the munmap on the decoders' path
// (docs/PERFORMANCE-NOTES.md, shards/iterator).
//
// The cache admits a mapping only while all it keeps stays within limit
// bytes, and evicts nothing to make room: an epoch over a dataset larger
// than the limit then finds the same shards each time (the first ones
// admitted), where evicting the least recently used would find none.
// A mapping shares the page cache, so what it holds is page tables, not
// copies; the kernel can still reclaim the pages under memory pressure.
//
// An entry is used again only for the same file unchanged: device, inode,
// size, mtime and ctime as at mapping. A file replaced or rewritten is
// mapped anew, and its old mapping is dropped once no decoder reads it.
// Every use still checks the shard's digest, as for a fresh mapping.
type mapCache struct {
	mu     sync.Mutex
	limit  int64
	bytes  int64 // mapped by the entries, in use or not
	ents   map[string]*mapEntry
	closed bool
	hits   int // for tests
}

// fileKey identifies a file's content as stat(2) sees it: the key of
// mapCache entries, and part of the scan cache's (scanCache).
type fileKey struct {
	dev, ino           uint64
	size, mtime, ctime int64 // times in nanoseconds
}

// fileKeyOf is the fileKey of a file as fi describes it; false where fi
// has no stat fields.
func fileKeyOf(fi os.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: st.Dev, ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}

type mapEntry struct {
	key   fileKey
	data  []byte
	unmap func() error
	refs  int
	gone  bool // no longer in ents: unmapped at its last release
}

func newMapCache(limit int64) *mapCache {
	return &mapCache{limit: limit, ents: make(map[string]*mapEntry)}
}

// get returns name's mapping if it is cached for the file as key describes
// it, with the function that releases this use of it.
func (c *mapCache) get(name string, key fileKey) ([]byte, func() error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.ents[name]
	switch {
	case !ok:
		return nil, nil, false
	case e.key != key:
		c.dropLocked(name, e)
		return nil, nil, false
	}
	e.refs++
	c.hits++
	return e.data, c.releaser(e), true
}

// add offers a new mapping of name, in use by the caller, to the cache.
// It returns the function that releases this use: it unmaps data unless
// the cache kept it.
func (c *mapCache) add(name string, key fileKey, data []byte, unmap func() error) func() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.ents[name]; ok {
		c.dropLocked(name, old) // a concurrent mapping of a changed file
	}
	if c.closed || c.bytes+int64(len(data)) > c.limit {
		return unmap
	}
	e := &mapEntry{key: key, data: data, unmap: unmap, refs: 1}
	c.ents[name] = e
	c.bytes += int64(len(data))
	return c.releaser(e)
}

func (c *mapCache) releaser(e *mapEntry) func() error {
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			c.mu.Lock()
			e.refs--
			last := e.refs == 0 && e.gone
			c.mu.Unlock()
			if last {
				err = e.unmap()
			}
		})
		return err
	}
}

// dropLocked takes e out of the cache; it is unmapped now if unused, else
// at its last release.
func (c *mapCache) dropLocked(name string, e *mapEntry) {
	delete(c.ents, name)
	c.bytes -= int64(len(e.data))
	e.gone = true
	if e.refs == 0 {
		_ = e.unmap()
	}
}

// close unmaps every mapping no decoder uses, and the others at their
// release; the cache admits nothing more.
func (c *mapCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for name, e := range c.ents {
		c.dropLocked(name, e)
	}
}
