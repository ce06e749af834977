package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gdsload/gdsload/internal/crc32c"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

// maxRounds bounds how often Serve starts over when another process
// evicts or damages a copy between two of its steps; then it reads from
// the store uncached.
const maxRounds = 4

// copyBuffer is the size of each read of a download: a read this large
// spans several ranged GETs, which an object store client runs in parallel.
const copyBuffer = 64 << 20

// errDamaged: a copy's bytes no longer match the CRC-32C recorded when it
// was written.
var errDamaged = errors.New("cache: copy damaged at rest")

// Serve returns remote, a file just opened from a store, served from its
// local copy: from the copy already in the folder (a hit), after waiting
// for another process that is writing it, or after downloading it (a
// miss). The returned file holds a shared lock on the entry, so no process
// evicts it, until Close; Serve closes remote unless it returns remote
// itself, which it does, uncached, when the entries in use leave no room.
// A file larger than the limit is ErrTooLarge.
func (c *Cache) Serve(ctx context.Context, remote vfs.File) (vfs.File, error) {
	url, id, size := remote.Name(), remote.Identity(), remote.Size()
	if err := c.CheckFits(url, size); err != nil {
		remote.Close()
		return nil, err
	}
	k := key(url, id)
	want := vfs.ExpectedSHA256(ctx)
	fetched := false
	for range maxRounds {
		l, err := lock(ctx, c.lockPath(k), syscall.LOCK_SH, &c.waited)
		if err != nil {
			remote.Close()
			return nil, err
		}
		if m, ok := c.readMeta(k); ok && m.URL == url && m.Identity == id {
			var f vfs.File
			var err error
			if want != "" && m.SHA256 != want {
				err = fmt.Errorf("%s: copy of %s has SHA-256 %s, the manifest says %s: %w", c.dataPath(k), url, m.SHA256, want, errDamaged)
			} else {
				f, err = c.openCopy(k, m, l)
			}
			switch {
			case errors.Is(err, errDamaged):
				l.unlock()
				c.refetched.Add(1)
				if err := c.dropLocked(ctx, k); err != nil {
					remote.Close()
					return nil, err
				}
				continue
			case err != nil:
				l.unlock()
				remote.Close()
				return nil, err
			}
			if fetched {
				c.misses.Add(1)
			} else {
				c.hits.Add(1)
			}
			c.served.Add(size)
			remote.Close()
			return f, nil
		}
		l.unlock()

		ex, err := lock(ctx, c.lockPath(k), syscall.LOCK_EX, &c.waited)
		if err != nil {
			remote.Close()
			return nil, err
		}
		if _, ok := c.readMeta(k); ok {
			ex.unlock() // another process wrote it meanwhile
			continue
		}
		room, err := c.fetch(ctx, k, remote, want)
		ex.unlock()
		if err != nil {
			remote.Close()
			return nil, err
		}
		if !room {
			break
		}
		fetched = true
	}
	c.bypassed.Add(1)
	return remote, nil
}

// CheckFits returns an error matching ErrTooLarge when a file of size
// bytes, named name, cannot fit in the cache even empty: a caller that
// knows its files' sizes up front (a dataset's manifest) checks them
// before it starts, instead of failing at the first large one.
func (c *Cache) CheckFits(name string, size int64) error {
	if size > c.opts.limit {
		return fmt.Errorf("%s: %w: %d bytes, the limit is %d; raise the limit or read it without the cache", name, ErrTooLarge, size, c.opts.limit)
	}
	return nil
}

// dropLocked removes entry k under its exclusive lock.
func (c *Cache) dropLocked(ctx context.Context, k string) error {
	ex, err := lock(ctx, c.lockPath(k), syscall.LOCK_EX, &c.waited)
	if err != nil {
		return err
	}
	defer ex.unlock()
	return c.drop(k)
}

// openCopy opens entry k's copy for a reader holding shared lock l,
// checking its CRC-32C first when hits are verified, and marks the entry
// used now.
func (c *Cache) openCopy(k string, m meta, l *flock) (vfs.File, error) {
	if c.opts.verifyHits {
		got, err := crcOfFile(c.dataPath(k))
		if err != nil {
			return nil, err
		}
		if got != m.CRC32C {
			return nil, fmt.Errorf("%s: copy of %s has CRC-32C %s, %s when written: %w", c.dataPath(k), m.URL, got, m.CRC32C, errDamaged)
		}
	}
	now := time.Now()
	_ = os.Chtimes(c.metaPath(k), now, now) // LRU order; best effort
	f, err := loader.OpenFile(c.dataPath(k), loader.DirectAuto)
	if err != nil {
		return nil, fmt.Errorf("cache: opening copy of %s: %w", m.URL, err)
	}
	return &File{File: f, url: m.URL, identity: m.Identity, mtime: m.ModTime, lock: l}, nil
}

func crcOfFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	h := crc32c.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 4<<20)); err != nil {
		return "", fmt.Errorf("cache: reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fetch downloads remote into entry k, the caller holding k's exclusive
// lock, and checks it against want (a manifest's SHA-256) when given.
// room is false when the entries in use leave no room for it.
func (c *Cache) fetch(ctx context.Context, k string, remote vfs.File, want string) (room bool, err error) {
	if err := c.drop(k); err != nil { // a copy without metadata
		return false, err
	}
	size := remote.Size()
	r, room, err := c.reserve(ctx, k, size)
	if err != nil || !room {
		return room, err
	}
	done := false
	defer func() {
		if !done {
			r.abandon()
		}
	}()
	m := meta{URL: remote.Name(), Identity: remote.Identity(), Size: size, ModTime: remote.ModTime(), Verified: "size"}
	sha, crc := sha256.New(), crc32c.New()
	sums := []hash.Hash{sha, crc}
	etag, err := newETagCheck(ctx, remote)
	if err != nil {
		return true, err
	}
	buf := make([]byte, min(c.chunk, max(size, 1)))
	rd := vfs.NewReader(ctx, remote)
	var n int64
	for n < size {
		got, err := io.ReadFull(rd, buf[:min(int64(len(buf)), size-n)])
		if got > 0 {
			if _, werr := r.f.WriteAt(buf[:got], n); werr != nil {
				return true, fmt.Errorf("cache: writing %s: %w", r.path, werr)
			}
			for _, h := range sums {
				h.Write(buf[:got])
			}
			etag.write(buf[:got])
			n += int64(got)
		}
		if err != nil {
			return true, fmt.Errorf("cache: downloading %s at offset %d: %w", m.URL, n, err)
		}
	}
	if v, ok := remote.(loader.Verifier); ok {
		if err := v.Verify(); err != nil {
			return true, fmt.Errorf("cache: %s changed while it was downloaded: %w", m.URL, err)
		}
	}
	if etag != nil {
		if m.Verified, err = etag.check(m.URL); err != nil {
			return true, err
		}
	}
	m.SHA256 = hex.EncodeToString(sha.Sum(nil))
	if want != "" {
		if m.SHA256 != want {
			return true, fmt.Errorf("cache: SHA-256 of %s as downloaded is %s, the manifest says %s: %w", m.URL, m.SHA256, want, ErrMismatch)
		}
		m.Verified = "sha256"
	}
	m.CRC32C = hex.EncodeToString(crc.Sum(nil))
	m.Written = time.Now()
	if err := c.commit(ctx, k, r, m); err != nil {
		return true, err
	}
	done = true
	c.downloaded.Add(n)
	return true, nil
}

// commit makes a finished download entry k: the copy is fsynced and
// renamed into place, then its metadata is written the same way, each
// rename made durable by an fsync of the folder.
func (c *Cache) commit(ctx context.Context, k string, r *reservation, m meta) error {
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("cache: syncing %s: %w", r.path, err)
	}
	// Under the folder's lock, so that usage never sees the copy in both
	// folders or in neither.
	g, err := lock(ctx, c.globalLock(), syscall.LOCK_EX, &c.waited)
	if err != nil {
		return err
	}
	err = os.Rename(r.path, c.dataPath(k))
	g.unlock()
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	_ = r.f.Close()
	entries := filepath.Join(c.dir, "entries")
	if err := syncDir(entries); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return writeAtomic(c.metaPath(k), b)
}

// writeAtomic writes b to path under a temporary name, fsyncs it, renames
// it into place and fsyncs the folder.
func writeAtomic(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("cache: writing %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cache: syncing folder %s: %w", dir, err)
	}
	return nil
}
