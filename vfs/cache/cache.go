package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultLimitFraction is the share of the cache folder's file system that
// a Cache may fill without WithLimit: this fraction of the free space plus
// the bytes the cache already holds, measured when the Cache opens.
const DefaultLimitFraction = 0.5

// ErrTooLarge reports a file larger than the cache's whole limit.
var ErrTooLarge = errors.New("cache: file larger than the cache limit")

// ErrMismatch reports a download whose bytes differ from the SHA-256 the
// caller expected (vfs.ExpectSHA256): the manifest or the object is
// wrong. Nothing is cached.
var ErrMismatch = errors.New("cache: bytes differ from the expected SHA-256")

// Option configures a Cache; each checks its value.
type Option func(*options) error

type options struct {
	limit      int64
	verifyHits bool
}

// WithLimit bounds the bytes the cache holds (complete copies and
// downloads under way) to n, which must be positive.
func WithLimit(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("cache: limit %d bytes: want a positive size", n)
		}
		o.limit = n
		return nil
	}
}

// WithVerifyHits sets whether every hit re-reads its copy to check the
// CRC-32C recorded when it was written (default true). A mismatch drops
// the entry and the file is fetched again. Off, a copy damaged at rest is
// found only by Verify or by the reader's own checksums.
func WithVerifyHits(on bool) Option {
	return func(o *options) error { o.verifyHits = on; return nil }
}

// Cache is a cache folder opened by this process. It is safe for
// concurrent use; other processes may open the same folder at the same
// time. Close it to record its statistics in the folder.
type Cache struct {
	dir  string
	opts options
	seq  atomic.Int64 // temporary names
	// chunk is the size of each read of a download (copyBuffer; tests
	// make it small to stop a download midway).
	chunk int64

	hits, misses, bypassed, evictions, refetched atomic.Int64
	downloaded, served                           atomic.Int64
	waited                                       atomic.Int64 // nanoseconds

	closeMu  sync.Mutex
	recorded Stats // already added to the folder's totals by Close
}

// Open opens (creating) the cache folder dir. It fails when dir cannot be
// written.
func Open(dir string, opts ...Option) (*Cache, error) {
	o := options{verifyHits: true}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		return nil, errors.New("cache: no folder given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: folder %s: %w", dir, err)
	}
	c := &Cache{dir: abs, opts: o, chunk: copyBuffer}
	for _, sub := range []string{"entries", "locks", "tmp"} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return nil, fmt.Errorf("cache: creating folder %s: %w", filepath.Join(abs, sub), err)
		}
	}
	if c.opts.limit == 0 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(abs, &st); err != nil {
			return nil, fmt.Errorf("cache: measuring free space of %s: %w", abs, err)
		}
		used, err := c.usage()
		if err != nil {
			return nil, err
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		c.opts.limit = int64(float64(free+used) * DefaultLimitFraction)
		if c.opts.limit <= 0 {
			return nil, fmt.Errorf("cache: %s has no free space; free some or give a limit", abs)
		}
	}
	return c, nil
}

// Dir is the cache folder, absolute.
func (c *Cache) Dir() string { return c.dir }

// Limit is the most bytes the cache holds.
func (c *Cache) Limit() int64 { return c.opts.limit }

// Stats counts what this process's Cache did since Open.
type Stats struct {
	// Hits are files served from a copy this process did not write;
	// Misses, files this process downloaded into the cache; Bypassed,
	// files read from the store uncached because the cache was full of
	// files in use; Refetched, copies found damaged on a hit and fetched
	// again.
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Bypassed  int64 `json:"bypassed"`
	Refetched int64 `json:"refetched"`
	// Evictions are entries this process removed to make room.
	Evictions int64 `json:"evictions"`
	// BytesDownloaded were written into the cache from the store;
	// BytesServed are the sizes of the files opened from copies (hits
	// and misses alike).
	BytesDownloaded int64 `json:"bytes_downloaded"`
	BytesServed     int64 `json:"bytes_served"`
	// Waited is the time spent waiting for another process's download or
	// for the folder's lock.
	Waited time.Duration `json:"waited_ns"`
}

// Stats returns this process's counters.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Bypassed: c.bypassed.Load(), Refetched: c.refetched.Load(),
		Evictions: c.evictions.Load(), BytesDownloaded: c.downloaded.Load(), BytesServed: c.served.Load(),
		Waited: time.Duration(c.waited.Load()),
	}
}

// key names the entry of url at identity.
func key(url, identity string) string {
	h := sha256.New()
	h.Write([]byte(url))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) dataPath(k string) string { return filepath.Join(c.dir, "entries", k+".data") }
func (c *Cache) metaPath(k string) string { return filepath.Join(c.dir, "entries", k+".json") }
func (c *Cache) lockPath(k string) string { return filepath.Join(c.dir, "locks", k+".lock") }
func (c *Cache) globalLock() string       { return filepath.Join(c.dir, "cache.lock") }

// meta describes a complete copy.
type meta struct {
	URL      string    `json:"url"`
	Identity string    `json:"identity"`
	Size     int64     `json:"size"`
	ModTime  time.Time `json:"mtime"`
	SHA256   string    `json:"sha256"`
	CRC32C   string    `json:"crc32c"`
	Verified string    `json:"verified"` // what the bytes were checked against when written
	Written  time.Time `json:"written"`
}

// readMeta returns the metadata of entry k when its copy is complete: the
// metadata file parses and the copy has its size.
func (c *Cache) readMeta(k string) (meta, bool) {
	b, err := os.ReadFile(c.metaPath(k))
	if err != nil {
		return meta{}, false
	}
	var m meta
	if json.Unmarshal(b, &m) != nil {
		return meta{}, false
	}
	fi, err := os.Stat(c.dataPath(k))
	if err != nil || fi.Size() != m.Size {
		return meta{}, false
	}
	return m, true
}

// drop removes entry k (its copy and metadata); the caller holds its
// exclusive lock.
func (c *Cache) drop(k string) error {
	err := errors.Join(ignoreMissing(os.Remove(c.metaPath(k))), ignoreMissing(os.Remove(c.dataPath(k))))
	if err != nil {
		return fmt.Errorf("cache: removing entry %s: %w", k, err)
	}
	return nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
