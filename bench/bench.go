// Package bench measures read strategies on the same file, in the same
// process and run, so their figures compare: naive POSIX reads, O_DIRECT,
// mmap, the loader engine, and (where a GPU exists) the bounce and gds paths.
// It is what `gdsload bench` runs. Ratios against external tools (fio, dd)
// are the job of the scripts in scripts/.
package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gdsload/gdsload/internal/stats"
	"github.com/gdsload/gdsload/vfs"
)

// Sample is one run of one mode.
type Sample struct {
	Bytes int64
	Wall  time.Duration
	CPU   time.Duration
	// Lat holds the latency of each read (chunk) of the run.
	Lat []time.Duration
	// GDSMode is the mode cuFile ran in, for a run through it.
	GDSMode string
}

// Mode is one way of reading a file.
type Mode struct {
	Name string
	// Help says what the mode does, in the words gdsio users know.
	Help string
	Run  func(ctx context.Context, path string, o Options) (Sample, error)
	// OnlyByName modes run only when asked for by name: they measure
	// something other than reading the whole file.
	OnlyByName bool
}

// Result summarises the runs of one mode.
type Result struct {
	Mode             string  `json:"mode"`
	Runs             int     `json:"runs"`
	Bytes            int64   `json:"bytes"`
	GiBPerS          float64 `json:"gib_per_s"`
	CPUSecondsPerGiB float64 `json:"cpu_seconds_per_gib"`
	P50Ms            float64 `json:"p50_ms"`
	P99Ms            float64 `json:"p99_ms"`
	// IOPS is the median over runs of reads (chunks) per second.
	IOPS float64 `json:"iops"`
	// MinGiBPerS and MaxGiBPerS give the spread over runs.
	MinGiBPerS float64 `json:"min_gib_per_s"`
	MaxGiBPerS float64 `json:"max_gib_per_s"`
	// GDSMode is the mode cuFile ran in (p2pdma, nvfs or compat) for a
	// mode that reads through it.
	GDSMode string `json:"gds_mode,omitempty"`
}

// Options control a benchmark: which modes Select picks, how each run
// reads, and how Run repeats them. The zero value means the defaults.
type Options struct {
	// Workers and ChunkSize shape the reads of the modes that read in
	// chunks (default: the loader's).
	Workers   int
	ChunkSize int64
	// BlockSize and RandomReads shape the random mode: how large each
	// read is and how many it makes (DefaultBlockSize, DefaultRandomReads).
	BlockSize   int64
	RandomReads int
	// Device is the GPU the GPU modes load into.
	Device int
	// FS reads a URL target (the loader mode). Nil: Select makes a
	// vfs.Mux with its defaults, which the Selection's Close closes.
	FS *vfs.Mux
	// Runs is how many times Run runs each mode (default 3).
	Runs int
	// Cold drops the file's cached pages before every run.
	Cold bool
	// Dropper empties the page cache for a file; DropCache by default.
	Dropper func(path string) (string, error)
	// OnRun, if set, is told of every finished run.
	OnRun func(mode string, run int, s Sample)
}

// Report is what Run measured.
type Report struct {
	// Results has one entry per mode that ran every run, in the order
	// given.
	Results []Result
	// Cache says how the page cache was treated.
	Cache string
	// Skipped names each mode that could not run, with the reason: a mode
	// that failed in any run (gds refused, O_DIRECT refused, a cuFile
	// handle that would not register) is dropped from the rounds after
	// the failure and listed here with its error.
	Skipped map[string]string
}

// Run measures every mode Runs times on path, alternating modes within each
// round so slow drifts of the machine hit all of them alike. A mode that
// fails is skipped from then on, with its error as the reason, and the
// others go on; Run fails only when no mode completes, or when the cache
// cannot be dropped for a cold run.
func Run(ctx context.Context, path string, modes []Mode, o Options) (*Report, error) {
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Dropper == nil {
		o.Dropper = DropCache
	}
	samples := make([][]Sample, len(modes))
	failed := make([]error, len(modes))
	rep := &Report{Cache: "warm (page cache kept)", Skipped: map[string]string{}}
	for run := range o.Runs {
		for i, m := range modes {
			if failed[i] != nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if o.Cold {
				h, err := o.Dropper(path)
				if err != nil {
					return nil, err
				}
				rep.Cache = h
			}
			s, err := m.Run(ctx, path, o)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				failed[i] = fmt.Errorf("mode %s, run %d: %w", m.Name, run+1, err)
				rep.Skipped[m.Name] = failed[i].Error()
				continue
			}
			if o.OnRun != nil {
				o.OnRun(m.Name, run, s)
			}
			samples[i] = append(samples[i], s)
		}
	}
	for i, m := range modes {
		if failed[i] == nil {
			rep.Results = append(rep.Results, summarise(m.Name, samples[i]))
		}
	}
	if len(rep.Results) == 0 && len(modes) > 0 {
		return nil, errors.Join(failed...)
	}
	return rep, nil
}

func summarise(mode string, ss []Sample) Result {
	r := Result{Mode: mode, Runs: len(ss)}
	var bw, cpu, iops []float64
	var lat []time.Duration
	for _, s := range ss {
		g := float64(s.Bytes) / (1 << 30)
		r.Bytes = s.Bytes
		if s.Wall > 0 {
			bw = append(bw, g/s.Wall.Seconds())
			iops = append(iops, float64(len(s.Lat))/s.Wall.Seconds())
		}
		if g > 0 {
			cpu = append(cpu, s.CPU.Seconds()/g)
		}
		lat = append(lat, s.Lat...)
		if s.GDSMode != "" {
			r.GDSMode = s.GDSMode
		}
	}
	r.GiBPerS = median(bw)
	r.CPUSecondsPerGiB = median(cpu)
	r.IOPS = median(iops)
	if len(bw) > 0 {
		r.MinGiBPerS, r.MaxGiBPerS = slices.Min(bw), slices.Max(bw)
	}
	p50, p99 := stats.Percentiles(lat)
	r.P50Ms = float64(p50) / float64(time.Millisecond)
	r.P99Ms = float64(p99) / float64(time.Millisecond)
	return r
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
