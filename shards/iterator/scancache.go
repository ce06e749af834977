package iterator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gdsload/gdsload/shards/webdataset"
)

// ScanCacheEnv names the environment variable that moves the scan cache
// (DefaultScanCacheDir): a directory, or "off" for none.
const ScanCacheEnv = "GDSLOAD_SCAN_CACHE"

// DefaultScanCacheDir is the scan cache that `gdsload iterate` uses
// (WithScanCache): $GDSLOAD_SCAN_CACHE when set ("off": none, ""), else
// gdsload/scan in the user's cache directory (os.UserCacheDir), or ""
// where there is none.
func DefaultScanCacheDir() string {
	if d, ok := os.LookupEnv(ScanCacheEnv); ok {
		if d == "off" {
			return ""
		}
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "gdsload", "scan")
}

// WithScanCache keeps what scanning a local shard found (its samples,
// sizes and CRC-32C) in dir, one small file per shard, and uses it instead
// of scanning the shard again while the file is unchanged: same device,
// inode, size, modification and change times, and scan options
// (webdataset.ScanFingerprint). Opening a local dataset without a manifest
// a second time then reads no shard. Any write to a shard changes its
// change time, so a rewritten shard is scanned again; a cached CRC-32C is
// still what every read of the shard is checked against, so a stale entry
// can fail a read, never pass wrong bytes. "" (the default) keeps no cache.
// Writing to dir is best effort: a cache that cannot be written costs a
// scan, not an error. URL datasets are not cached.
func WithScanCache(dir string) OpenOption {
	return func(o *openOptions) error { o.scanCache = dir; return nil }
}

// scanCacheVersion changes when what a scan records changes.
const scanCacheVersion = 1

// scanCache is a scanner's view of a WithScanCache directory.
type scanCache struct {
	dir         string // "": off
	fingerprint string // of the scan's options
}

// cachedScan is one shard's file in the cache.
type cachedScan struct {
	Key      string                `json:"key"`
	Entry    webdataset.ShardEntry `json:"entry"`
	FirstKey string                `json:"first_key"`
	LastKey  string                `json:"last_key"`
}

// key identifies the shard file at path as fi describes it, with the scan
// options; ok is false where it cannot (no cache, no stat fields).
func (c *scanCache) key(path string, fi os.FileInfo) (file, key string, ok bool) {
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if c == nil || c.dir == "" || !isStat {
		return "", "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", false
	}
	key = fmt.Sprintf("v%d %s dev=%d ino=%d size=%d mtime=%d.%d ctime=%d.%d %s", scanCacheVersion, abs,
		st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, c.fingerprint)
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json"), key, true
}

// get returns the cached scan of the shard at path, if it is there and
// the shard is unchanged.
func (c *scanCache) get(path string, fi os.FileInfo) (webdataset.ShardEntry, bool) {
	file, key, ok := c.key(path, fi)
	if !ok {
		return webdataset.ShardEntry{}, false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return webdataset.ShardEntry{}, false
	}
	var s cachedScan
	if json.Unmarshal(b, &s) != nil || s.Key != key || !plausible(s.Entry, path, fi) {
		return webdataset.ShardEntry{}, false
	}
	s.Entry.FirstKey, s.Entry.LastKey = s.FirstKey, s.LastKey
	return s.Entry, true
}

// plausible reports whether e can be what a scan of the shard at path,
// as fi describes it, found: a cache file damaged or written by hand
// whose key still matches is a miss, and the shard is scanned again.
func plausible(e webdataset.ShardEntry, path string, fi os.FileInfo) bool {
	return e.Name == filepath.Base(path) && e.Bytes == fi.Size() && e.Samples >= 0 &&
		e.SampleBytes >= 0 && !e.SplitFirst
}

// put records the scan e of the shard at path, as fi described it before
// the scan: a file written in full beside its final name, then renamed,
// so that readers (other ranks opening the same dataset) see a whole
// entry or none.
func (c *scanCache) put(path string, fi os.FileInfo, e webdataset.ShardEntry) {
	file, key, ok := c.key(path, fi)
	if !ok {
		return
	}
	b, err := json.Marshal(cachedScan{Key: key, Entry: e, FirstKey: e.FirstKey, LastKey: e.LastKey})
	if err != nil || os.MkdirAll(c.dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".scan-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		_ = os.Remove(tmp.Name())
	}
}
