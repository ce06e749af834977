package rdmafs

import (
	"container/list"
	"sync"
	"syscall"
)

// digestBlock is the span of file bytes one cached CRC32C covers. READs
// of the default 4 MiB chunk at aligned offsets are made of whole blocks.
const digestBlock = 1 << 20

// defaultDigestBlocks is the default bound on cached block CRCs: 1 TiB of
// files in 4 MiB of CRCs.
const defaultDigestBlocks = 1 << 20

// digestCache keeps the CRC32C of whole digestBlock-sized blocks of the
// files READ with a CRC, so that a later READ of the same bytes can go to
// the socket with sendfile and take its CRC from the cache instead of
// reading every byte again. Entries are keyed by device and inode and
// stamped with the size, modification and change times seen at open: any
// write to the file changes the change time, and the next READ drops the
// file's blocks. A write that the stamp misses (two writes within the file
// system's timestamp granularity, a store through a writable mapping)
// makes the client's CRC differ from the cached one: the read fails with
// a checksum error, never with wrong bytes accepted.
//
// It holds at most maxBlocks block CRCs, dropping the least recently read
// files first.
type digestCache struct {
	maxBlocks int

	mu     sync.Mutex
	files  map[fileKey]*list.Element // of *fileDigests
	lru    *list.List                // front: most recently used
	blocks int
}

type fileKey struct{ dev, ino uint64 }

type fileStamp struct{ size, mtime, ctime int64 }

// fileDigests holds the cached CRCs of one file, as stamped.
type fileDigests struct {
	key   fileKey
	stamp fileStamp

	mu   sync.Mutex
	crc  []uint32
	have []uint64 // bit i: crc[i] is valid
}

func newDigestCache(maxBlocks int) *digestCache {
	if maxBlocks < 0 {
		return nil
	}
	if maxBlocks == 0 {
		maxBlocks = defaultDigestBlocks
	}
	return &digestCache{maxBlocks: maxBlocks, files: map[fileKey]*list.Element{}, lru: list.New()}
}

// lookup returns the digests of the open file whose fstat is st, created
// empty when the file is new or changed since its blocks were cached; nil
// when the cache is off or the file is too large for it.
func (c *digestCache) lookup(st *syscall.Stat_t) *fileDigests {
	if c == nil || st.Size < digestBlock {
		return nil
	}
	key := fileKey{dev: uint64(st.Dev), ino: st.Ino}
	stamp := fileStamp{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	n := int(st.Size / digestBlock)
	if n > c.maxBlocks {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.files[key]; ok {
		fd := e.Value.(*fileDigests)
		if fd.stamp == stamp {
			c.lru.MoveToFront(e)
			return fd
		}
		c.remove(e)
	}
	for c.blocks+n > c.maxBlocks {
		c.remove(c.lru.Back())
	}
	fd := &fileDigests{key: key, stamp: stamp, crc: make([]uint32, n), have: make([]uint64, (n+63)/64)}
	c.files[key] = c.lru.PushFront(fd)
	c.blocks += n
	return fd
}

func (c *digestCache) remove(e *list.Element) {
	fd := c.lru.Remove(e).(*fileDigests)
	delete(c.files, fd.key)
	c.blocks -= len(fd.crc)
}

// crcRange extends crc with the CRC32C of file bytes [off, off+n): whole
// blocks from the cache where it has them, everything else through
// compute(crc, off, n), which reads the bytes; whole blocks computed are
// cached. fd may be nil (nothing cached).
func (fd *fileDigests) crcRange(crc uint32, off, n int64, compute func(crc uint32, off, n int64) (uint32, error)) (uint32, error) {
	end := off + n
	for off < end {
		b := off / digestBlock
		if fd == nil || off%digestBlock != 0 || b >= int64(len(fd.crc)) || end-off < digestBlock {
			// A part of a block, or no cache: compute up to the next
			// block boundary (or the end).
			next := min((b+1)*digestBlock, end)
			var err error
			if crc, err = compute(crc, off, next-off); err != nil {
				return 0, err
			}
			off = next
			continue
		}
		c, ok := fd.get(b)
		if !ok {
			var err error
			if c, err = compute(0, off, digestBlock); err != nil {
				return 0, err
			}
			fd.put(b, c)
		}
		crc = crc32cCombine(crc, c, digestBlock)
		off += digestBlock
	}
	return crc, nil
}

func (fd *fileDigests) get(b int64) (uint32, bool) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	return fd.crc[b], fd.have[b/64]&(1<<(b%64)) != 0
}

func (fd *fileDigests) put(b int64, c uint32) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	fd.crc[b] = c
	fd.have[b/64] |= 1 << (b % 64)
}
