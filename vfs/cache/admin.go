package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Entry describes a complete copy in the folder.
type Entry struct {
	URL      string    `json:"url"`
	Identity string    `json:"identity"`
	Size     int64     `json:"size"`
	LastUse  time.Time `json:"last_use"`
	// Verified says what the bytes were checked against when written:
	// "etag-md5", or "size" when the store gave nothing stronger.
	Verified string `json:"verified"`
	SHA256   string `json:"sha256"`
	key      string
}

// Entries lists the folder's complete copies, most recently used first.
func (c *Cache) Entries() ([]Entry, error) {
	ents, err := os.ReadDir(filepath.Join(c.dir, "entries"))
	if err != nil {
		return nil, fmt.Errorf("cache: listing %s: %w", c.dir, err)
	}
	var out []Entry
	for _, e := range ents {
		k, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		m, ok := c.readMeta(k)
		if !ok {
			continue
		}
		mi, err := os.Stat(c.metaPath(k))
		if err != nil {
			continue
		}
		out = append(out, Entry{URL: m.URL, Identity: m.Identity, Size: m.Size, LastUse: mi.ModTime(), Verified: m.Verified, SHA256: m.SHA256, key: k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUse.After(out[j].LastUse) })
	return out, nil
}

// Problem is an entry Verify found damaged.
type Problem struct {
	Entry
	// Err says what is wrong; Removed, whether Verify dropped the entry
	// (it keeps one a process holds, which its next hit re-checks).
	Err     string `json:"error"`
	Removed bool   `json:"removed"`
}

// Verify re-hashes every complete copy against the SHA-256 recorded when
// it was written and removes those that differ and no process holds. It
// returns the entries checked and the damaged ones.
func (c *Cache) Verify(ctx context.Context) (checked int, bad []Problem, err error) {
	ents, err := c.Entries()
	if err != nil {
		return 0, nil, err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return checked, bad, err
		}
		l, err := lock(ctx, c.lockPath(e.key), syscall.LOCK_SH, &c.waited)
		if err != nil {
			return checked, bad, err
		}
		m, ok := c.readMeta(e.key)
		if !ok {
			l.unlock() // evicted meanwhile
			continue
		}
		got, err := sha256OfFile(c.dataPath(e.key))
		l.unlock()
		checked++
		if err == nil && got == m.SHA256 {
			continue
		}
		p := Problem{Entry: e}
		if err != nil {
			p.Err = err.Error()
		} else {
			p.Err = fmt.Sprintf("SHA-256 of the copy is %s, %s when written", got, m.SHA256)
		}
		if ex, err := tryLock(c.lockPath(e.key), syscall.LOCK_EX); err == nil {
			p.Removed = c.drop(e.key) == nil
			ex.unlock()
		}
		bad = append(bad, p)
	}
	return checked, bad, nil
}

func sha256OfFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 4<<20)); err != nil {
		return "", fmt.Errorf("cache: reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Totals are the statistics of every Cache closed on the folder.
type Totals struct {
	Hits            int64 `json:"hits"`
	Misses          int64 `json:"misses"`
	Bypassed        int64 `json:"bypassed"`
	BytesDownloaded int64 `json:"bytes_downloaded"`
	BytesServed     int64 `json:"bytes_served"`
}

// HitRate is hits over the files opened through the cache, 0 before any.
func (t Totals) HitRate() float64 {
	n := t.Hits + t.Misses + t.Bypassed
	if n == 0 {
		return 0
	}
	return float64(t.Hits) / float64(n)
}

func (c *Cache) statsPath() string { return filepath.Join(c.dir, "stats.json") }

// Totals reads the statistics recorded in the folder.
func (c *Cache) Totals() (Totals, error) {
	var t Totals
	b, err := os.ReadFile(c.statsPath())
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, fmt.Errorf("cache: %w", err)
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("cache: %s: %w; delete it to start counting again", c.statsPath(), err)
	}
	return t, nil
}

// Close adds this process's counters to the folder's statistics (Totals).
// The Cache may still be used; a later Close adds only what came since.
func (c *Cache) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	s := c.Stats()
	d := Totals{Hits: s.Hits - c.recorded.Hits, Misses: s.Misses - c.recorded.Misses, Bypassed: s.Bypassed - c.recorded.Bypassed,
		BytesDownloaded: s.BytesDownloaded - c.recorded.BytesDownloaded, BytesServed: s.BytesServed - c.recorded.BytesServed}
	if d == (Totals{}) {
		return nil
	}
	g, err := lock(context.Background(), c.globalLock(), syscall.LOCK_EX, &c.waited)
	if err != nil {
		return err
	}
	defer g.unlock()
	t, err := c.Totals()
	if err != nil {
		t = Totals{}
	}
	t.Hits += d.Hits
	t.Misses += d.Misses
	t.Bypassed += d.Bypassed
	t.BytesDownloaded += d.BytesDownloaded
	t.BytesServed += d.BytesServed
	b, _ := json.Marshal(t)
	if err := writeAtomic(c.statsPath(), b); err != nil {
		return err
	}
	c.recorded = s
	return nil
}
