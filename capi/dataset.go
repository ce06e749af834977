package main

/*
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// datasetRequest is gdsload_dataset_open's request (gdsload.h).
type datasetRequest struct {
	Source        string          `json:"source"`
	Rank          int             `json:"rank"`
	WorldSize     int             `json:"world_size"`
	Consumer      int             `json:"consumer"`
	Consumers     int             `json:"consumers"`
	Partitions    int             `json:"partitions"`
	Seed          uint64          `json:"seed"`
	Shuffle       bool            `json:"shuffle"`
	ShuffleBytes  int64           `json:"shuffle_bytes"`
	FirstEpoch    int64           `json:"first_epoch"`
	Epochs        int64           `json:"epochs"`
	DropRemainder bool            `json:"drop_remainder"`
	Workers       int             `json:"workers"`
	Prefetch      int             `json:"prefetch"`
	Verify        *bool           `json:"verify"`
	Direct        string          `json:"direct"`
	Token         string          `json:"token"`
	State         *iterator.State `json:"state"`
	Skip          int64           `json:"skip"`
	// SkipBadShards leaves out shards that cannot be read, with a
	// warning on stderr, as `gdsload iterate --skip-bad-shards` does.
	SkipBadShards bool `json:"skip_bad_shards"`
	cacheRequest
}

// datasetResult is gdsload_dataset_open's result.
type datasetResult struct {
	Iterator    uint64         `json:"iterator"`
	Samples     int64          `json:"samples"`
	Shards      int            `json:"shards"`
	Fingerprint string         `json:"fingerprint"`
	Root        string         `json:"root"`  // the folder or URL shard names are relative to
	State       iterator.State `json:"state"` // where iteration starts
}

// openDataset opens the dataset and an iterator over this consumer's
// share, positioned at the state (or at first_epoch) plus skip samples.
// Epochs counts from first_epoch: the iteration ends after epoch
// first_epoch+epochs-1.
func (l *library) openDataset(ctx context.Context, req datasetRequest) ([]byte, error) {
	mode, err := parseDirect(req.Direct)
	if err != nil {
		return nil, err
	}
	if req.Epochs <= 0 || req.FirstEpoch < 0 || req.Skip < 0 {
		return nil, requestError{fmt.Sprintf("dataset: first_epoch %d, epochs %d, skip %d: want epochs >= 1 and the others >= 0", req.FirstEpoch, req.Epochs, req.Skip)}
	}
	if req.WorldSize == 0 {
		req.WorldSize = 1
	}
	mux, _, err := newMux(req.Token, req.cacheRequest)
	if err != nil {
		return nil, err
	}
	var onShardError webdataset.ShardErrorHandler
	if req.SkipBadShards {
		onShardError = webdataset.WarnAndContinue(os.Stderr)
	}
	ds, err := iterator.Open(ctx, req.Source, iterator.WithFS(mux), iterator.WithScanCache(iterator.DefaultScanCacheDir()),
		iterator.WithReaderOptions(webdataset.WithShardErrorHandler(onShardError)))
	if err != nil {
		return nil, errors.Join(err, mux.Close())
	}
	// The iterator reads a URL dataset's shards through mux: both stay
	// until the iterator closes.
	release := func() { _ = ds.Close(); _ = mux.Close() }
	opts := iterator.Options{
		Rank: req.Rank, WorldSize: req.WorldSize, Consumer: req.Consumer, Consumers: req.Consumers,
		Partitions: req.Partitions, Seed: req.Seed, Shuffle: req.Shuffle, ShuffleBytes: req.ShuffleBytes,
		Epochs: req.FirstEpoch + req.Epochs, DropRemainder: req.DropRemainder,
		Workers: req.Workers, Prefetch: req.Prefetch, Direct: mode,
		SkipChecksum: req.Verify != nil && !*req.Verify, OnShardError: onShardError,
		CacheAhead: req.cacheAhead(),
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	it, err := iterator.New(ds, opts)
	if err != nil {
		release()
		return nil, requestError{err.Error()}
	}
	st := it.State()
	if req.State != nil {
		st = *req.State
	} else {
		st.Epoch = req.FirstEpoch
	}
	if err := it.Restore(st); err != nil {
		it.Close()
		release()
		return nil, err
	}
	if err := it.Skip(req.Skip); err != nil {
		it.Close()
		release()
		return nil, requestError{err.Error()}
	}
	h := l.iterators.add(it, release)
	return json.Marshal(datasetResult{Iterator: h.id, Samples: ds.Samples(), Shards: len(ds.Shards), Fingerprint: ds.Fingerprint(), Root: ds.Root, State: h.state})
}

// iterators is the table of open iterators.
type iterators struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*iterHandle
}

// iterHandle runs one iterator in its own goroutine, one encoded sample
// ahead of the caller, so a caller waiting with a timeout can give up and
// come back without losing a sample.
type iterHandle struct {
	id     uint64
	it     *iterator.Iterator
	cancel context.CancelFunc
	out    chan encoded
	done   chan struct{}

	release func() // closes what the iterator reads through

	mu    sync.Mutex
	state iterator.State // after the samples handed out
	err   error          // sticky: the iteration ended (io.EOF) or failed
}

// encoded is one sample in C memory (gdsload.h's layout), or the error
// that ended the iteration.
type encoded struct {
	buf   unsafe.Pointer
	n     int
	state iterator.State
	err   error
}

func (t *iterators) add(it *iterator.Iterator, release func()) *iterHandle {
	ctx, cancel := context.WithCancel(context.Background())
	h := &iterHandle{it: it, release: release, cancel: cancel, out: make(chan encoded), done: make(chan struct{}), state: it.State()}
	t.mu.Lock()
	t.next++
	h.id = t.next
	if t.m == nil {
		t.m = map[uint64]*iterHandle{}
	}
	t.m[h.id] = h
	t.mu.Unlock()
	go h.run(ctx)
	return h
}

func (t *iterators) get(id uint64) *iterHandle {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// close stops iterator id and frees what it holds.
func (t *iterators) close(id uint64) {
	t.mu.Lock()
	h := t.m[id]
	delete(t.m, id)
	t.mu.Unlock()
	if h == nil {
		return
	}
	h.cancel()
	<-h.done
	h.it.Close()
	h.release()
}

func (h *iterHandle) run(ctx context.Context) {
	defer close(h.done)
	for {
		s, err := h.it.Next(ctx)
		var e encoded
		if err != nil {
			e.err = err
		} else {
			e.buf, e.n, e.err = encodeSample(s)
			e.state = h.it.State()
		}
		select {
		case h.out <- e:
		case <-ctx.Done():
			C.free(e.buf)
			return
		}
		if e.err != nil {
			return
		}
	}
}

// next waits up to timeout for the next sample. ok is false when none
// came in time; err is io.EOF after the last sample.
func (h *iterHandle) next(timeout time.Duration) (buf unsafe.Pointer, n int, err error, ok bool) {
	h.mu.Lock()
	err = h.err
	h.mu.Unlock()
	if err != nil {
		return nil, 0, err, true
	}
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	var e encoded
	select {
	case e = <-h.out:
	case <-tm.C:
		return nil, 0, nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.err != nil {
		h.err = e.err
		return nil, 0, e.err, true
	}
	h.state = e.state
	return e.buf, e.n, nil, true
}

func (h *iterHandle) currentState() iterator.State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// sampleLayout is the version of the sample record (gdsload.h).
const sampleLayout = 1

// encodeSample copies s into one malloc'd record: the caller frees it.
func encodeSample(s *iterator.Sample) (unsafe.Pointer, int, error) {
	n := 4 + 8 + 8 + 8 + 1 + 4 + len(s.Key) + 4 + len(s.Shard) + 4
	for _, f := range s.Fields {
		n += 4 + len(f.Ext) + 8 + len(f.Data)
	}
	p := C.malloc(C.size_t(n))
	if p == nil {
		return nil, 0, errors.New("out of memory for a sample record")
	}
	b := unsafe.Slice((*byte)(p), n)
	w := b[:0]
	w = binary.LittleEndian.AppendUint32(w, sampleLayout)
	w = binary.LittleEndian.AppendUint64(w, uint64(s.Epoch))
	w = binary.LittleEndian.AppendUint64(w, uint64(s.Position))
	w = binary.LittleEndian.AppendUint64(w, uint64(s.Index))
	pad := byte(0)
	if s.Padding {
		pad = 1
	}
	w = append(w, pad)
	str := func(w []byte, s string) []byte {
		w = binary.LittleEndian.AppendUint32(w, uint32(len(s)))
		return append(w, s...)
	}
	w = str(w, s.Key)
	w = str(w, s.Shard)
	w = binary.LittleEndian.AppendUint32(w, uint32(len(s.Fields)))
	for _, f := range s.Fields {
		w = str(w, f.Ext)
		w = binary.LittleEndian.AppendUint64(w, uint64(len(f.Data)))
		w = append(w, f.Data...)
	}
	if len(w) != n {
		C.free(p)
		return nil, 0, fmt.Errorf("internal error: sample record of %d bytes, sized %d", len(w), n)
	}
	return p, n, nil
}

// sampleBytes copies a record from encodeSample into Go memory and frees
// it (for tests, which cannot use cgo themselves).
func sampleBytes(p unsafe.Pointer, n int) []byte {
	b := C.GoBytes(p, C.int(n))
	C.free(p)
	return b
}
