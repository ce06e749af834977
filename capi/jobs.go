package main

import (
	"context"
	"sync"
	"time"
)

// job is one background call (a load, a save, a dataset open): the caller
// polls it with wait and may cancel it.
type job struct {
	cancel context.CancelFunc
	done   chan struct{}
	result []byte // JSON, set before done closes
	err    error
}

// jobs is the table of jobs not yet collected.
type jobs struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*job
}

// start runs fn in the background and returns the job's id.
func (t *jobs) start(fn func(ctx context.Context) ([]byte, error)) uint64 {
	ctx, cancel := context.WithCancel(context.Background())
	j := &job{cancel: cancel, done: make(chan struct{})}
	t.mu.Lock()
	t.next++
	id := t.next
	if t.m == nil {
		t.m = map[uint64]*job{}
	}
	t.m[id] = j
	t.mu.Unlock()
	go func() {
		defer close(j.done)
		defer cancel()
		j.result, j.err = fn(ctx)
	}()
	return id
}

func (t *jobs) get(id uint64) *job {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// wait waits up to timeout for job id. It returns ok false when the job is
// still running; otherwise the job's result and error, and the job is
// forgotten.
func (t *jobs) wait(id uint64, timeout time.Duration) (result []byte, err error, ok bool) {
	j := t.get(id)
	if j == nil {
		return nil, requestError{"no such job (already collected, or never started)"}, true
	}
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case <-j.done:
	case <-tm.C:
		return nil, nil, false
	}
	t.mu.Lock()
	delete(t.m, id)
	t.mu.Unlock()
	return j.result, j.err, true
}

// cancel asks job id to stop; wait still reports how it ended.
func (t *jobs) cancel(id uint64) {
	if j := t.get(id); j != nil {
		j.cancel()
	}
}
