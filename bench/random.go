package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gdsload/gdsload/loader"
)

// Random-read defaults: what fio users compare (--rw=randread --bs=4k).
const (
	DefaultBlockSize   = 4096
	DefaultRandomReads = 1 << 16
)

// RandomMode reads Config.RandomReads blocks of Config.BlockSize bytes at
// random block-aligned offsets of the file (drawn with a fixed seed, so
// every run reads the same blocks; a block may repeat), through the loader
// engine with Config.Workers reads at once, O_DIRECT where the file system
// takes it: a load of many small ranges, as fio --rw=randread measures.
// Its Result's IOPS and p99 are the figures to compare. It reads part of
// the file, so it runs only when asked for by name.
func RandomMode() Mode {
	return Mode{Name: "random", OnlyByName: true,
		Help: "O_DIRECT reads of --block-size bytes at random aligned offsets through the loader engine, --workers at once (fio --rw=randread); see IOPS and p99",
		Run:  runRandom}
}

func runRandom(ctx context.Context, path string, cfg Config) (Sample, error) {
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
	ring, err := loader.NewRing(2*workers, block)
	if err != nil {
		return Sample{}, err
	}
	defer ring.Close()
	r := rand.New(rand.NewPCG(uint64(blocks), uint64(block)))
	jobs := make([]loader.Job, reads)
	for i := range jobs {
		jobs[i] = loader.Job{Source: f, Offset: r.Int64N(blocks) * block, Length: block, Dest: ring}
	}
	return LoaderRun(ctx, jobs, loader.Options{Workers: workers, ChunkSize: block})
}
