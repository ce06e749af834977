package iterator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gdsload/gdsload/vfs"
)

// ShardData is one whole shard as ShardIterator yields it.
type ShardData struct {
	Name  string
	Epoch int64
	// Position is the shard's place in the epoch's shard order.
	Position int64
	// Padding marks a wrap-around repeat that evens out rank counts.
	Padding bool
	// Data holds the stored (possibly compressed) shard bytes. It is valid
	// until the next call to Next or Close: the buffer is reused.
	Data []byte
}

// ShardIterator yields whole shards instead of samples, for consumers that
// load shards wholesale (into a GPU, say). The epoch's shard order is the
// one the sample Iterator uses; global shard position j goes to rank j mod
// WorldSize, with the same padding or dropping, the same prefetch bound and
// the same State semantics, counted in shards. Options.Partitions,
// ShuffleBytes and Workers do not apply.
type ShardIterator struct {
	ds      *Dataset
	opts    Options
	ord     order
	world0  int
	pool    *bufferPool
	started bool
	epoch   int64
	start   int64
	sch     *schedule
	k       int64
	feed    *shardFeed
	held    []byte
	err     error
}

// NewShards returns a whole-shard iterator over ds for the rank in opts.
func NewShards(ds *Dataset, opts Options) (*ShardIterator, error) {
	it, err := New(ds, opts) // validates and fills defaults
	if err != nil {
		return nil, err
	}
	return &ShardIterator{ds: ds, opts: it.opts, ord: order{seed: it.opts.Seed, partitions: 1, shuffle: it.opts.Shuffle},
		world0: it.opts.WorldSize, pool: &bufferPool{keep: it.opts.Prefetch + 2}}, nil
}

type shardFeed struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    chan shardRead
}

type shardRead struct {
	shard int
	g     int64
	buf   []byte
	err   error
}

// Next returns the next whole shard of this rank, io.EOF after the last
// epoch, or an error (sticky, as for Iterator.Next).
func (it *ShardIterator) Next(ctx context.Context) (*ShardData, error) {
	if it.held != nil {
		it.pool.put(it.held)
		it.held = nil
	}
	if it.err != nil {
		return nil, it.err
	}
	it.started = true
	for {
		if it.sch == nil {
			if it.epoch >= it.opts.Epochs {
				return nil, io.EOF
			}
			order := shardOrder(it.ds, it.ord, it.epoch)
			sch := newSchedule(int64(len(order)), it.start, it.opts.Rank, it.opts.WorldSize, it.opts.DropRemainder)
			it.sch, it.k = &sch, 0
			it.feed = it.startFeed(order, sch)
		}
		if it.k >= it.sch.count {
			it.feed.stop()
			it.feed, it.sch = nil, nil
			it.epoch, it.start = it.epoch+1, 0
			continue
		}
		var r shardRead
		select {
		case r = <-it.feed.out:
		case <-ctx.Done():
			it.err = ctx.Err()
			return nil, it.err
		}
		if r.err != nil {
			if h := it.opts.OnShardError; h != nil && !errors.Is(r.err, context.Canceled) {
				if r.err = h(it.ds.Shards[r.shard].Name, r.err); r.err == nil {
					it.k++ // skipped: on to the next shard
					continue
				}
			}
			it.err = r.err
			return nil, r.err
		}
		it.k++
		it.held = r.buf
		n := it.sch.n
		return &ShardData{Name: it.ds.Shards[r.shard].Name, Epoch: it.epoch, Position: r.g % n, Padding: r.g >= n, Data: r.buf}, nil
	}
}

func shardOrder(d *Dataset, ord order, epoch int64) []int {
	o := make([]int, len(d.Shards))
	for i := range o {
		o[i] = i
	}
	if ord.shuffle {
		for i, j := range newRNG(ord.seed, uint64(epoch), tagShards).perm(len(o)) {
			o[i] = int(j)
		}
	}
	return o
}

func (it *ShardIterator) startFeed(order []int, sch schedule) *shardFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &shardFeed{cancel: cancel, out: make(chan shardRead, max(it.opts.Prefetch-1, 0))}
	f.wg.Go(func() {
		for k := range sch.count {
			g := sch.global(k)
			shard := order[g%sch.n]
			sh := it.ds.Shards[shard]
			buf, err := readShard(vfs.ExpectSHA256(ctx, sh.SHA256), it.opts.Opener, it.pool, sh.Name, sh.Bytes, 2*it.opts.maxShardBytes())
			if err == nil {
				_, err = checkShard(buf, sh, it.opts)
			}
			select {
			case f.out <- shardRead{shard: shard, g: g, buf: buf, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil && it.opts.OnShardError == nil {
				return
			}
		}
	})
	return f
}

func (f *shardFeed) stop() {
	f.cancel()
	f.wg.Wait()
}

// State returns the position after the shards returned so far; Consumed
// counts global shard positions.
func (it *ShardIterator) State() State {
	st := State{Fingerprint: it.ds.Fingerprint() + shardUnit, Seed: it.ord.seed, Epoch: it.epoch, Consumed: it.start,
		Partitions: 1, WorldSizeAtStart: it.world0, Shuffle: it.ord.shuffle, DropRemainder: it.opts.DropRemainder}
	if it.sch != nil {
		if it.k >= it.sch.count {
			st.Epoch, st.Consumed = it.epoch+1, 0
		} else {
			st.Consumed = it.sch.global(it.k) - int64(it.opts.Rank)
		}
	}
	return st
}

// shardUnit marks whole-shard states, so a sample iterator refuses them.
const shardUnit = "/shards"

// Restore moves a fresh ShardIterator to st (see Iterator.Restore).
func (it *ShardIterator) Restore(st State) error {
	if it.started {
		return errors.New("iterator: Restore after Next; restore a fresh iterator")
	}
	if fp := it.ds.Fingerprint() + shardUnit; st.Fingerprint != fp {
		return fmt.Errorf("iterator: %w: state fingerprint %s, dataset %s", ErrOtherDataset, st.Fingerprint, fp)
	}
	if st.Epoch < 0 || st.Consumed < 0 || st.Consumed >= int64(max(len(it.ds.Shards), 1)) {
		return fmt.Errorf("iterator: state position epoch %d, consumed %d is outside the dataset's %d shards", st.Epoch, st.Consumed, len(it.ds.Shards))
	}
	it.ord = order{seed: st.Seed, partitions: 1, shuffle: st.Shuffle}
	it.opts.DropRemainder = st.DropRemainder
	it.world0 = st.WorldSizeAtStart
	it.epoch, it.start = st.Epoch, st.Consumed
	return nil
}

// Close stops prefetching and waits for its goroutine; safe to call twice.
func (it *ShardIterator) Close() error {
	if it.feed != nil {
		it.feed.stop()
		it.feed = nil
	}
	if it.err == nil {
		it.err = errors.New("iterator: closed")
	}
	return nil
}
