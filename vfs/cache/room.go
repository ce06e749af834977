package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// usage is the bytes of the folder's copies and downloads under way (each
// reserves its size up front), exact under the folder's lock, which a
// download holds to rename itself from tmp/ into entries/.
func (c *Cache) usage() (int64, error) {
	var n int64
	for _, sub := range []string{"tmp", "entries"} {
		ents, err := os.ReadDir(filepath.Join(c.dir, sub))
		if err != nil {
			return 0, fmt.Errorf("cache: listing %s: %w", filepath.Join(c.dir, sub), err)
		}
		for _, e := range ents {
			if sub == "entries" && !strings.HasSuffix(e.Name(), ".data") {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			n += fi.Size()
		}
	}
	return n, nil
}

// removeDeadDownloads deletes temporary files no process holds: those of
// processes that died mid-download.
func (c *Cache) removeDeadDownloads() {
	dir := filepath.Join(c.dir, "tmp")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		l, err := tryLock(p, syscall.LOCK_EX)
		if err != nil {
			continue // a live download, or gone
		}
		_ = os.Remove(p)
		l.unlock()
	}
}

// candidate is an entry that eviction may remove.
type candidate struct {
	key     string
	size    int64
	lastUse time.Time
}

// candidates lists the folder's copies, least recently used first. A
// copy's last use is its metadata file's modification time, which each
// hit touches; a copy without metadata (a crash between the two renames)
// sorts first.
func (c *Cache) candidates() []candidate {
	ents, _ := os.ReadDir(filepath.Join(c.dir, "entries"))
	var out []candidate
	for _, e := range ents {
		k, ok := strings.CutSuffix(e.Name(), ".data")
		if !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		cd := candidate{key: k, size: fi.Size()}
		if mi, err := os.Stat(c.metaPath(k)); err == nil {
			cd.lastUse = mi.ModTime()
		}
		out = append(out, cd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lastUse.Before(out[j].lastUse) })
	return out
}

// shrink evicts least recently used entries that no process holds until
// the folder holds at most target bytes, the caller holding the folder's
// lock. It returns the bytes held afterwards.
func (c *Cache) shrink(target int64) (held int64, res PruneResult, err error) {
	c.removeDeadDownloads()
	held, err = c.usage()
	if err != nil {
		return 0, res, err
	}
	for _, cd := range c.candidates() {
		if held <= target {
			break
		}
		l, err := tryLock(c.lockPath(cd.key), syscall.LOCK_EX)
		if errors.Is(err, errBusy) {
			res.InUse++
			continue
		}
		if err != nil {
			return held, res, err
		}
		err = c.drop(cd.key)
		l.remove()
		if err != nil {
			return held, res, err
		}
		held -= cd.size
		res.Evicted++
		res.Freed += cd.size
		c.evictions.Add(1)
	}
	return held, res, nil
}

// reservation is the temporary file a download writes, created at its
// full size while the folder's lock was held, and flocked by its writer
// so that no other process deletes it as dead.
type reservation struct {
	f    *os.File
	path string
}

// reserve makes room for size more bytes and creates the temporary file
// of entry k. ok is false when the entries in use leave no room.
func (c *Cache) reserve(ctx context.Context, k string, size int64) (_ *reservation, ok bool, err error) {
	g, err := lock(ctx, c.globalLock(), syscall.LOCK_EX, &c.waited)
	if err != nil {
		return nil, false, err
	}
	defer g.unlock()
	held, _, err := c.shrink(c.opts.limit - size)
	if err != nil {
		return nil, false, err
	}
	if held+size > c.opts.limit {
		return nil, false, nil
	}
	p := filepath.Join(c.dir, "tmp", fmt.Sprintf("%s.%d.%d", k, os.Getpid(), c.seq.Add(1)))
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("cache: creating %s: %w", p, err)
	}
	if err := flockRetry(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		_ = os.Remove(p)
		return nil, false, fmt.Errorf("cache: locking %s: %w", p, err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		_ = os.Remove(p)
		return nil, false, fmt.Errorf("cache: reserving %d bytes in %s: %w", size, p, err)
	}
	return &reservation{f: f, path: p}, true, nil
}

// abandon deletes an unfinished download.
func (r *reservation) abandon() {
	_ = os.Remove(r.path)
	_ = r.f.Close()
}

// PruneResult says what Prune or Clear did.
type PruneResult struct {
	// Evicted entries were removed, freeing Freed bytes; InUse entries
	// were kept because a process holds them.
	Evicted int   `json:"evicted"`
	Freed   int64 `json:"freed"`
	InUse   int   `json:"in_use"`
	// Held is the bytes the folder holds afterwards.
	Held int64 `json:"held"`
}

// Prune evicts least recently used entries no process holds until the
// folder holds at most to bytes (0 empties it). Entries in use stay.
func (c *Cache) Prune(ctx context.Context, to int64) (PruneResult, error) {
	if to < 0 {
		return PruneResult{}, fmt.Errorf("cache: prune to %d bytes: want 0 or more", to)
	}
	g, err := lock(ctx, c.globalLock(), syscall.LOCK_EX, &c.waited)
	if err != nil {
		return PruneResult{}, err
	}
	defer g.unlock()
	held, res, err := c.shrink(to)
	res.Held = held
	return res, err
}

// Clear removes every entry that no process holds, and the lock files
// of keys that have no copy and that no process holds.
func (c *Cache) Clear(ctx context.Context) (PruneResult, error) {
	res, err := c.Prune(ctx, 0)
	if err != nil {
		return res, err
	}
	locks, _ := os.ReadDir(filepath.Join(c.dir, "locks"))
	for _, e := range locks {
		k, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok {
			continue
		}
		l, err := tryLock(c.lockPath(k), syscall.LOCK_EX)
		if err != nil {
			continue // held
		}
		if _, err := os.Stat(c.dataPath(k)); errors.Is(err, os.ErrNotExist) {
			l.remove()
		} else {
			l.unlock()
		}
	}
	return res, nil
}
