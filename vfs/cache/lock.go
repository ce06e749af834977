package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// flock is an open lock file and the lock this process holds on it.
type flock struct {
	f    *os.File
	path string
}

// errBusy: a non-blocking lock attempt found the lock held.
var errBusy = errors.New("lock held by another process")

// tryLock opens (creating) path and takes the lock how (syscall.LOCK_SH
// or LOCK_EX) without waiting. A lock file unlinked by an evictor between
// our open and our flock is detected (its inode no longer has the name)
// and opened again, so two processes never hold "exclusive" locks on
// different inodes of one name.
func tryLock(path string, how int) (*flock, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cache: opening lock %s: %w", path, err)
		}
		if err := flockRetry(f, how|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errBusy
			}
			return nil, fmt.Errorf("cache: locking %s: %w", path, err)
		}
		same, err := sameFile(f, path)
		if err != nil {
			f.Close()
			return nil, err
		}
		if same {
			return &flock{f: f, path: path}, nil
		}
		f.Close() // unlinked under us: lock the new one
	}
}

// lock is tryLock that waits, polling, until it gets the lock or ctx ends.
// It adds the time it waits to *waited as it goes, in nanoseconds.
func lock(ctx context.Context, path string, how int, waited *atomic.Int64) (*flock, error) {
	delay := time.Millisecond
	for {
		l, err := tryLock(path, how)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errBusy) {
			return nil, err
		}
		start := time.Now()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			waited.Add(int64(time.Since(start)))
			return nil, fmt.Errorf("cache: waiting for lock %s: %w", path, context.Cause(ctx))
		case <-t.C:
		}
		waited.Add(int64(time.Since(start)))
		delay = min(2*delay, 50*time.Millisecond)
	}
}

func flockRetry(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func sameFile(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("cache: %w", err)
	}
	b, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cache: %w", err)
	}
	return os.SameFile(a, b), nil
}

// unlock releases the lock by closing the file.
func (l *flock) unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// remove unlinks the lock file while this process holds it exclusively,
// then releases it; waiters notice (sameFile) and lock a new file.
func (l *flock) remove() {
	_ = os.Remove(l.path)
	l.unlock()
}
