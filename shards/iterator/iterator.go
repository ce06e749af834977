package iterator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// Options configure an Iterator. The zero value of each field is a usable
// default except where noted.
type Options struct {
	// Rank and WorldSize place this process among the ranks of a job
	// (0 <= Rank < WorldSize; WorldSize 0 means 1). See FromEnv.
	Rank, WorldSize int
	// Consumer and Consumers split this rank's share between Consumers
	// readers, such as the worker processes of a PyTorch DataLoader
	// (0 <= Consumer < Consumers; Consumers 0 means 1). Consumer c yields
	// the rank's positions c, c+Consumers, c+2·Consumers, ... of each
	// epoch: together the consumers yield the rank's share of every epoch
	// exactly, each position once, and within an epoch, taking one sample
	// from each consumer in turn gives the rank's order. Each consumer
	// reads only the shards its positions need. A split iterator's State is that consumer's own:
	// restore it into the same Consumer of the same Consumers.
	Consumer, Consumers int
	// Partitions is the number of canonical partitions P fixed for the
	// whole run (default WorldSize). The order depends on it, never on the
	// world size; choose a multiple of the world sizes the run may use so
	// every rank reads only its own partitions' shards.
	Partitions int
	// Seed and Shuffle: with Shuffle, each epoch permutes the shards and
	// shuffles samples within windows of ShuffleBytes per partition
	// (0: shards permuted, samples in shard order).
	Seed         uint64
	Shuffle      bool
	ShuffleBytes int64
	// Epochs is the number of epochs of the run (default 1); iteration ends
	// with io.EOF after epoch Epochs-1.
	Epochs int64
	// DropRemainder drops the last positions of an epoch that cannot be
	// split evenly; by default ranks are padded by wrapping around to the
	// start of the epoch order instead. Either way every rank yields the
	// same number of samples per epoch.
	DropRemainder bool
	// Workers decode shards in parallel (default 1). Prefetch bounds the
	// shard reads queued or decoded ahead of the consumer (default
	// 2*Workers): memory stays within about (Prefetch + Workers) shards plus
	// the shuffle windows being emitted. Decoders reuse the buffers the
	// consumer hands back: beyond Workers decoded shards they wait for one
	// rather than take fresh memory, unless the consumer waits for theirs.
	Workers, Prefetch int
	// CacheAhead opens the shards this many reads ahead of the one being
	// read, in the rank's order, and closes them unread (0, the default:
	// none; at most MaxCacheAhead). Through a cache (package vfs/cache)
	// each such open downloads the shard into it, so reads find their
	// shards on local disk, without the memory a deeper Prefetch holds.
	CacheAhead int
	// SkipChecksum skips checking each shard's digest against the dataset
	// (its manifest). By default every shard read is checked where the
	// manifest gives a digest: its CRC-32C when it has one (it detects
	// damage, at a few percent of the cost of decoding), else its SHA-256;
	// sizes are always checked. SHA256 checks the SHA-256 even where a
	// CRC-32C is known, for manifests kept apart from shards that someone
	// could tamper with (SHA-256 costs about as much as zstd decoding).
	SkipChecksum, SHA256 bool
	// MaxShardBytes caps one shard's decompressed size (default
	// webdataset.DefaultMaxShardBytes).
	MaxShardBytes int64
	// Opener reads shards (default: for a dataset Open found at a URL,
	// through the Mux it was found with; else DirOpener{Root: dataset
	// root, Direct: Direct}).
	Opener ShardOpener
	// Direct is the O_DIRECT mode of the default opener: DirectAuto (the
	// zero value) bypasses the page cache where the file system allows,
	// right for datasets much larger than memory; DirectOff keeps shards
	// in the page cache for the next epoch, and the default opener keeps
	// its mappings of compressed shards too, up to a quarter of the
	// machine's memory, until Close: later epochs map them no more.
	Direct loader.DirectMode
	// ReaderOptions configure shard decoding (caps).
	ReaderOptions []webdataset.Option
	// OnShardError, when set, is told of each shard that cannot be read,
	// checked or decoded (webdataset.WarnAndContinue writes a warning):
	// returning nil skips the samples this rank wanted from it, and
	// iteration goes on; returning an error stops with it. By default
	// (nil) the error stops iteration. Skipped samples leave their
	// positions empty, so this rank then yields fewer samples than the
	// others that epoch: a distributed job must tolerate uneven ranks.
	// States stay exact. It is called from Next's goroutine.
	OnShardError webdataset.ShardErrorHandler
}

// Sample is one sample as the iterator yields it.
type Sample struct {
	Key   string // WebDataset key
	Shard string // shard name
	Index int64  // sample index within the shard
	Epoch int64
	// Position is the sample's place in the epoch's global order.
	Position int64
	// Padding marks a wrap-around repeat that evens out rank counts.
	Padding bool
	// Fields alias a pooled shard buffer: they stay valid until the next
	// call to Next or Close. Copy what must live longer.
	Fields []webdataset.Field
}

// Get returns the bytes of the field with extension ext (lowercase,
// without the dot: "jpg", "cls", "seg.png"), valid as long as Fields are.
func (s *Sample) Get(ext string) ([]byte, bool) {
	for _, f := range s.Fields {
		if f.Ext == ext {
			return f.Data, true
		}
	}
	return nil, false
}

// Bytes is the size of the sample: its fields' bytes together.
func (s *Sample) Bytes() int64 {
	var n int64
	for _, f := range s.Fields {
		n += int64(len(f.Data))
	}
	return n
}

// All returns the rest of the iteration as a sequence for a range loop:
// each sample with a nil error, then, if iteration fails, one final
// (nil, err) — io.EOF, the normal end, is not reported. A sample's bytes
// (Fields, Get) stay valid until the loop body returns to the next
// iteration, as with Next: copy what must live longer. Breaking out of the
// loop leaves the iterator where it stopped: State, then Close, as after
// Next.
func (it *Iterator) All(ctx context.Context) iter.Seq2[*Sample, error] {
	return func(yield func(*Sample, error) bool) {
		for {
			s, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(s, nil) {
				return
			}
		}
	}
}

// Iterator yields one rank's share of a dataset, epoch after epoch. It is
// not safe for concurrent use; Close it to stop its goroutines.
type Iterator struct {
	ds           *Dataset
	opts         Options
	ord          order
	worldAtStart int
	pool         *bufferPool // decompressed shards
	rawPool      *bufferPool // shards as read
	maps         *mapCache   // the default opener's mappings kept between epochs
	maxHint      int64       // the largest decodeHint of the dataset's shards

	started bool
	epoch   int64
	start   int64 // global position this epoch's schedule started at
	lay     *layout
	walk    *walker
	pipe    *pipeline
	release []*holder // buffers of samples already returned
	err     error
}

// ErrImpossibleShard reports shard counts in the dataset (its manifest)
// that no shard can have: negative, or more than MaxShardBytes can hold.
var ErrImpossibleShard = errors.New("impossible counts in the manifest")

// MaxPartitions bounds Partitions and WorldSize: an epoch's layout holds
// an entry per partition, so a mistyped or hostile count (from a flag or a
// state file) would otherwise exhaust memory.
const MaxPartitions = 1 << 20

// maxShardBytes is MaxShardBytes with its default.
func (o Options) maxShardBytes() int64 {
	if o.MaxShardBytes <= 0 {
		return webdataset.DefaultMaxShardBytes
	}
	return o.MaxShardBytes
}

// New returns an iterator over ds for the rank described by opts.
func New(ds *Dataset, opts Options) (*Iterator, error) {
	if opts.WorldSize == 0 {
		opts.WorldSize = 1
	}
	if opts.Partitions == 0 {
		opts.Partitions = opts.WorldSize
	}
	if opts.Epochs == 0 {
		opts.Epochs = 1
	}
	if opts.Workers == 0 {
		opts.Workers = 1
	}
	if opts.Prefetch == 0 {
		opts.Prefetch = 2 * opts.Workers
	}
	if opts.Opener == nil {
		opts.Opener = ds.opener
	}
	var maps *mapCache
	if opts.Opener == nil {
		maps = newMapCache(defaultMapCacheBytes())
		opts.Opener = DirOpener{Root: ds.Root, Direct: opts.Direct, maps: maps}
	}
	switch {
	case opts.WorldSize < 0 || opts.Rank < 0 || opts.Rank >= opts.WorldSize:
		return nil, fmt.Errorf("iterator: rank %d outside world size %d", opts.Rank, opts.WorldSize)
	case opts.Consumers < 0 || opts.Consumer < 0 || opts.Consumer >= max(opts.Consumers, 1):
		return nil, fmt.Errorf("iterator: consumer %d outside %d consumers", opts.Consumer, opts.Consumers)
	case opts.Consumers > MaxPartitions || int64(opts.WorldSize)*int64(max(opts.Consumers, 1)) > MaxPartitions:
		return nil, fmt.Errorf("iterator: %d consumers of world size %d: at most %d readers in all", opts.Consumers, opts.WorldSize, MaxPartitions)
	case opts.Partitions < 0 || opts.Workers < 0 || opts.Prefetch < 0 || opts.ShuffleBytes < 0 || opts.Epochs < 0 || opts.CacheAhead < 0:
		return nil, fmt.Errorf("iterator: negative option in %+v", opts)
	case opts.CacheAhead > MaxCacheAhead:
		return nil, fmt.Errorf("iterator: cache ahead %d: at most %d", opts.CacheAhead, MaxCacheAhead)
	case opts.Partitions > MaxPartitions || opts.WorldSize > MaxPartitions:
		return nil, fmt.Errorf("iterator: %d partitions for world size %d: at most %d", opts.Partitions, opts.WorldSize, MaxPartitions)
	}
	maxShard := opts.maxShardBytes()
	var maxHint int64
	for _, s := range ds.Shards {
		if s.Samples < 0 || s.Bytes < 0 || s.SampleBytes < 0 {
			return nil, fmt.Errorf("iterator: shard %s: %w: negative size or sample count", s.Name, ErrImpossibleShard)
		}
		// Every sample takes at least one 512-byte tar header, and a shard
		// decodes to at most maxShard bytes: counts beyond that are a
		// damaged manifest, refused before they size any allocation.
		if s.Samples > maxShard/512 || s.SampleBytes > maxShard || s.Bytes > 2*maxShard {
			return nil, fmt.Errorf("iterator: shard %s: %w: %d samples of %d bytes in %d bytes, more than a shard of at most %d bytes decoded can hold (MaxShardBytes); rewrite the manifest with 'gdsload manifest'",
				s.Name, ErrImpossibleShard, s.Samples, s.SampleBytes, s.Bytes, maxShard)
		}
		maxHint = max(maxHint, decodeHint(s))
	}
	return &Iterator{
		ds:           ds,
		opts:         opts,
		ord:          order{seed: opts.Seed, partitions: opts.Partitions, shuffle: opts.Shuffle, windowBytes: opts.ShuffleBytes},
		worldAtStart: opts.WorldSize,
		pool:         &bufferPool{keep: opts.Prefetch + 2*opts.Workers + 2},
		rawPool:      &bufferPool{keep: 2*opts.Workers + 2},
		maps:         maps,
		maxHint:      maxHint,
	}, nil
}

// Next returns the next sample of this rank, io.EOF after the last epoch,
// or an error. Errors are sticky, including ctx's: State still gives the
// exact position, so a new iterator restored from it carries on.
func (it *Iterator) Next(ctx context.Context) (*Sample, error) {
	for _, h := range it.release {
		h.pool.put(h.buf)
	}
	it.release = it.release[:0]
	if it.err != nil {
		return nil, it.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	it.started = true
	for {
		if it.walk == nil {
			if it.epoch >= it.opts.Epochs {
				return nil, io.EOF
			}
			if it.pipe == nil {
				it.lay = newLayout(it.ds, it.ord, it.epoch)
				it.walk = newWalker(it.lay, it.schedule(it.lay.n))
				it.pipe = it.startPipeline(it.epoch, it.lay, it.walk.sch)
			} else {
				// The pipeline runs on across epochs and made this one's.
				select {
				case it.lay = <-it.pipe.layouts:
				case <-ctx.Done():
					it.err = ctx.Err()
					return nil, it.err
				}
				it.walk = newWalker(it.lay, it.schedule(it.lay.n))
			}
		}
		i, v, fresh, ok := it.walk.next()
		if !ok {
			// The pipeline is already on the next epoch, if any.
			it.walk = nil
			it.epoch, it.start = it.epoch+1, 0
			if it.epoch >= it.opts.Epochs {
				it.pipe.stop()
				it.pipe = nil
			}
			continue
		}
		if fresh {
			if err := it.receive(ctx, v); err != nil {
				// The position was not delivered, so State still points at
				// it; the half-received visit cannot be resumed in place.
				it.walk.k--
				it.err = err
				return nil, err
			}
		}
		if s := it.emit(i, v); s != nil {
			return s, nil
		}
		// Its shard was skipped (OnShardError): on to the next position.
	}
}

// schedule is this reader's share of the epoch's n positions from it.start:
// the rank's, split for its consumer.
func (it *Iterator) schedule(n int64) schedule { return it.scheduleFrom(n, it.start) }

// scheduleFrom is this reader's share of an epoch's n positions from
// global position start. It reads only the options, so the pipeline may
// call it for later epochs while the consumer runs.
func (it *Iterator) scheduleFrom(n, start int64) schedule {
	return newSchedule(n, start, it.opts.Rank, it.opts.WorldSize, it.opts.DropRemainder).split(it.opts.Consumer, it.opts.Consumers)
}

// Skip moves a fresh iterator (no Next call yet; after Restore if any)
// past the next n positions it would yield, crossing epochs as Next would,
// without reading anything. A consumer of a split rank resumes this way
// from a state taken where all consumers stood together plus the number
// of samples it yielded since.
func (it *Iterator) Skip(n int64) error {
	if it.started {
		return errors.New("iterator: Skip after Next; skip on a fresh iterator")
	}
	if n < 0 {
		return fmt.Errorf("iterator: skip %d samples: want a count >= 0", n)
	}
	total := it.ds.Samples()
	for n > 0 && it.epoch < it.opts.Epochs {
		sch := it.schedule(total)
		if n < sch.count {
			it.start = sch.global(n) - sch.rank
			return nil
		}
		n -= sch.count
		it.epoch, it.start = it.epoch+1, 0
	}
	return nil
}

// receive takes the pipeline's copy of visit v, waits for its samples and
// moves them into v.
func (it *Iterator) receive(ctx context.Context, v *visit) error {
	var pv *visit
	select {
	case pv = <-it.pipe.visits:
	case <-ctx.Done():
		return ctx.Err()
	}
	if pv == nil || pv.epoch != it.epoch || pv.part != v.part || pv.win != v.win || pv.lap != v.lap || pv.iStart != v.iStart {
		return errors.New("iterator: internal error: prefetch and consumer disagree on the visit order")
	}
	if err := it.pipe.load(ctx, pv, it.skipShard); err != nil {
		return err
	}
	v.samples = pv.samples
	return nil
}

// skipShard asks OnShardError about a shard that failed: nil means go on
// without its samples.
func (it *Iterator) skipShard(shard int, err error) error {
	if it.opts.OnShardError == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return it.opts.OnShardError(it.ds.Shards[shard].Name, err)
}

// emit returns the sample at partition index i of visit v, nil when its
// shard was skipped.
func (it *Iterator) emit(i int64, v *visit) *Sample {
	k := (i - v.iStart) / v.step
	if k < 0 || k >= int64(len(v.samples)) || v.samples[k].sample == nil {
		return nil
	}
	ld := v.samples[k]
	v.samples[k] = loaded{} // what the caller no longer needs is not kept
	if ld.hold.left--; ld.hold.left == 0 {
		it.release = append(it.release, ld.hold)
	}
	g := it.walk.sch.global(it.walk.k - 1)
	return &Sample{
		Key:      ld.sample.Key,
		Shard:    it.ds.Shards[ld.shard].Name,
		Index:    ld.index,
		Epoch:    it.epoch,
		Position: g % it.lay.n,
		Padding:  g >= it.lay.n,
		Fields:   ld.sample.Fields,
	}
}

// Close stops prefetching and waits for its goroutines. It is safe to call
// more than once.
func (it *Iterator) Close() error {
	if it.pipe != nil {
		it.pipe.stop()
		it.pipe = nil
	}
	it.maps.close()
	if it.err == nil {
		it.err = errors.New("iterator: closed")
	}
	return nil
}

// checkShard compares shard bytes as read with what the dataset says:
// always the size, and a digest unless opts.SkipChecksum (see
// Options.SkipChecksum). verified reports that a CRC-32C matched: the
// bytes are those a scan read to the end of their compressed stream when
// it made the manifest (see webdataset.ShardEntry), so decoding them may
// skip the frame checksums. Errors name the shard and wrap
// webdataset.ErrShardSize or ErrShardChecksum.
func checkShard(raw []byte, sh Shard, opts Options) (verified bool, err error) {
	e := checkEntry(sh, opts)
	if e.SHA256 == "" && e.CRC32C == "" && sh.Bytes <= 0 {
		return false, nil
	}
	if err := webdataset.VerifyShardBytesQuick(raw, e); err != nil {
		return false, err
	}
	return (e.SHA256 != "" || e.CRC32C != "") && sh.CRC32C != "", nil
}

// checkEntry is what checkShard checks sh's bytes against: its size, and
// the one digest opts choose (none, SHA-256 or CRC-32C).
func checkEntry(sh Shard, opts Options) webdataset.ShardEntry {
	e := webdataset.ShardEntry{Name: sh.Name, Bytes: sh.Bytes}
	switch {
	case opts.SkipChecksum:
	case opts.SHA256 && sh.SHA256 != "":
		e.SHA256 = sh.SHA256
	case sh.CRC32C != "":
		e.CRC32C = sh.CRC32C
	default:
		e.SHA256 = sh.SHA256
	}
	return e
}
