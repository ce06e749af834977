package iterator

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"

	"github.com/gdsload/gdsload/internal/regular"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// scanner counts the samples of shards for Open when a dataset has no
// manifest. Each shard is mapped, decompressed whole into a pooled buffer
// by a pooled Decompressor and walked in memory
// (webdataset.ScanShardBytes), and only its CRC-32C is taken, not its
// SHA-256 (nothing to compare that with later, and the CRC-32C is what
// reads are checked against): on bench-iterate's shards this costs about
// as much as decoding them once, a fraction of what webdataset.ScanShard
// (streamed, SHA-256, archive/tar) costs (docs/PERFORMANCE-NOTES.md,
// shards/iterator). An uncompressed shard is not
// read at all but for its tar headers. Safe for concurrent use.
type scanner struct {
	opts  []webdataset.Option
	decs  chan *webdataset.Decompressor
	bufs  *bufferPool
	cache *scanCache // nil: none (WithScanCache)
}

// shardsScanned counts the shards read by scans, not found in a scan
// cache (tests watch it).
var shardsScanned atomic.Int64

// scanWorkers bounds the shards scanned at once: each holds a whole
// decompressed shard.
func scanWorkers() int { return min(runtime.GOMAXPROCS(0), 8) }

func newScanner(opts []webdataset.Option, cacheDir string) *scanner {
	n := scanWorkers()
	s := &scanner{opts: append([]webdataset.Option{webdataset.WithSHA256(false)}, opts...),
		decs: make(chan *webdataset.Decompressor, n), bufs: &bufferPool{keep: n}}
	if fp, err := webdataset.ScanFingerprint(s.opts...); err == nil && cacheDir != "" {
		s.cache = &scanCache{dir: cacheDir, fingerprint: fp}
	}
	return s
}

// close frees the pooled decompressors.
func (s *scanner) close() {
	for {
		select {
		case d := <-s.decs:
			d.Close()
		default:
			return
		}
	}
}

// scan returns the entry of the shard file at path, named by its base
// name as webdataset.ScanShard names it.
func (s *scanner) scan(ctx context.Context, path string) (webdataset.ShardEntry, error) {
	if err := ctx.Err(); err != nil {
		return webdataset.ShardEntry{}, err
	}
	f, fi, err := regular.Open(path)
	if err != nil {
		return webdataset.ShardEntry{}, fmt.Errorf("scanning shard: %w", err)
	}
	// The shard as opened is the one cached, or scanned and then cached.
	slot, cached := s.cache.slot(path, fi)
	if cached {
		if e, ok := s.cache.get(slot, path, fi); ok {
			f.Close()
			return e, nil
		}
	}
	shardsScanned.Add(1)
	// An uncompressed shard is counted from its tar headers alone: it is
	// not read in, and no digest is taken (that would read it all); reads
	// are then checked for size only. A compressed one is decoded whole.
	compressed := webdataset.CompressionFromName(path) != webdataset.None
	data, unmap, err := mapFile(f, fi.Size(), compressed)
	f.Close()
	if err != nil {
		return webdataset.ShardEntry{}, fmt.Errorf("scanning shard %s: %w", path, err)
	}
	defer unmap()
	var dec *webdataset.Decompressor
	select {
	case dec = <-s.decs:
	default:
		if dec, err = webdataset.NewDecompressor(0, 0); err != nil {
			return webdataset.ShardEntry{}, err
		}
	}
	name := filepath.Base(path)
	var e webdataset.ShardEntry
	err = guardMapped(rawShard{data: data, mapped: true}, name, func() error {
		// A hint: shards of data that does not compress decompress to
		// about their size, text to 3 or 4 times it.
		buf := s.bufs.get(3 * int64(len(data)))
		var err error
		opts := s.opts
		if !compressed {
			opts = append(opts[:len(opts):len(opts)], webdataset.WithCRC32C(false))
		}
		e, buf, err = webdataset.ScanShardBytes(ctx, data, name, dec, buf, opts...)
		s.bufs.put(buf)
		return err
	})
	select {
	case s.decs <- dec:
	default:
		dec.Close()
	}
	if err == nil && cached {
		s.cache.put(slot, e)
	}
	return e, err
}
