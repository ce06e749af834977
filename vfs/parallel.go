package vfs

import (
	"context"
	"sync"
	"sync/atomic"
)

// metadataWorkers is how many stats or opens of local files run at once:
// on a cold cache each may wait for the disk to read an inode, and a
// directory of many small files is listed and opened much faster with
// several such waits overlapping (as `xargs -P 8 cat` overlaps them),
// while a warm one costs about the same.
const metadataWorkers = 8

// forEach runs fn(i) for i in [0, n), up to metadataWorkers at once when
// n is large enough for that to pay (a single goroutine otherwise), and
// returns the error of the lowest i that failed. After a failure no new
// call starts.
func forEach(ctx context.Context, n int, fn func(i int) error) error {
	if n < 2*metadataWorkers {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range metadataWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed.Load() {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
				} else {
					errs[i] = fn(i)
				}
				if errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
