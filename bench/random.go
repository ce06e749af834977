package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gdsload/gdsload/loader"
)

// Random-read defaults: what fio users compare (--rw=randread --bs=4k).
const (
	DefaultBlockSize   = 4096
	DefaultRandomReads = 1 << 16
)

// RandomMode reads Options.RandomReads blocks of Options.BlockSize bytes at
// random block-aligned offsets of the file (drawn with a fixed seed, so
// every run reads the same blocks; a block may repeat) with
// loader.File.ReadMany, Options.Workers reads in flight, O_DIRECT where the
// file system takes it: many small reads, as fio --rw=randread measures.
// Its Result's IOPS and p99 are the figures to compare. It reads part of
// the file, so it runs only when asked for by name.
func RandomMode() Mode {
	return Mode{Name: "random", OnlyByName: true,
		Help: "O_DIRECT reads of --block-size bytes at random aligned offsets (loader.File.ReadMany), --workers in flight at once (fio --rw=randread); see IOPS and p99",
		Run:  runRandom}
}

func runRandom(ctx context.Context, path string, cfg Options) (Sample, error) {
	block := cfg.BlockSize
	if block <= 0 {
		block = DefaultBlockSize
	}
	reads := cfg.RandomReads
	if reads <= 0 {
		reads = DefaultRandomReads
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = loader.DefaultWorkers
	}
	f, err := loader.OpenFile(path, loader.DirectAuto)
	if err != nil {
		return Sample{}, err
	}
	defer f.Close()
	blocks := f.Size() / block
	if blocks == 0 {
		return Sample{}, fmt.Errorf("random reads of %d-byte blocks: %s has only %d bytes", block, path, f.Size())
	}
	r := rand.New(rand.NewPCG(uint64(blocks), uint64(block)))
	ranges := make([]loader.Range, reads)
	for i := range ranges {
		ranges[i] = loader.Range{Off: r.Int64N(blocks) * block, Len: block}
	}
	return measure(func() (int64, []time.Duration, error) {
		lat := make([]time.Duration, 0, reads)
		var n int64
		err := f.ReadMany(ranges, workers, func(rr loader.RangeRead) error {
			if rr.Err != nil {
				return rr.Err
			}
			if int64(len(rr.Data)) != block {
				return fmt.Errorf("random read %d at offset %d: %d bytes, want %d", rr.Index, ranges[rr.Index].Off, len(rr.Data), block)
			}
			n += block
			lat = append(lat, rr.Latency)
			return nil
		})
		return n, lat, err
	})
}
