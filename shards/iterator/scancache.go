package iterator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

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

// scanSlot is where a shard's scan is cached, and the key its cache
// file must hold to be used for the shard as it is now.
type scanSlot struct{ file, key string }

// slot is the scanSlot of the shard file at path as fi describes it, with
// the scan options; ok is false where there is none (no cache, no stat
// fields).
func (c *scanCache) slot(path string, fi os.FileInfo) (s scanSlot, ok bool) {
	fk, isStat := fileKeyOf(fi)
	if c == nil || c.dir == "" || !isStat {
		return scanSlot{}, false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return scanSlot{}, false
	}
	sum := sha256.Sum256([]byte(abs))
	return scanSlot{
		file: filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json"),
		key: fmt.Sprintf("v%d %s dev=%d ino=%d size=%d mtime=%d ctime=%d %s", scanCacheVersion, abs,
			fk.dev, fk.ino, fk.size, fk.mtime, fk.ctime, c.fingerprint),
	}, true
}

// get returns the scan cached in slot for the shard at path, as fi
// describes it, if it is there and the shard is unchanged.
func (c *scanCache) get(slot scanSlot, path string, fi os.FileInfo) (webdataset.ShardEntry, bool) {
	b, err := os.ReadFile(slot.file)
	if err != nil {
		return webdataset.ShardEntry{}, false
	}
	var s cachedScan
	if json.Unmarshal(b, &s) != nil || s.Key != slot.key || !plausible(s.Entry, path, fi) {
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

// put records the scan e in slot: a file written in full beside its final
// name, then renamed, so that readers (other ranks opening the same
// dataset) see a whole entry or none.
func (c *scanCache) put(slot scanSlot, e webdataset.ShardEntry) {
	b, err := json.Marshal(cachedScan{Key: slot.key, Entry: e, FirstKey: e.FirstKey, LastKey: e.LastKey})
	if err != nil || os.MkdirAll(c.dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".scan-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), slot.file) != nil {
		_ = os.Remove(tmp.Name())
	}
}
