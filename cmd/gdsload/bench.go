package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/bench"
	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/progress"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

type benchOptions struct {
	modes     string
	runs      int
	cold      bool
	workers   int
	chunkSize string
	blockSize string
	reads     int
	asJSON    bool
	device    int
	remote    remoteFlags
}

func newBenchCmd() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench [flags] PATH",
		Short: "Compare read modes on one file: POSIX, O_DIRECT, mmap, the loader, and GPU paths",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runBench(cmd, o, a[0])
		},
	}
	cmd.Long = "Bench reads the same file with each mode, alternating modes within every round,\n" +
		"and prints the median bandwidth, CPU seconds per GiB and read latency of each.\n\nModes:\n" + modeHelp()
	f := cmd.Flags()
	f.StringVar(&o.modes, "modes", "", "comma-separated modes (default: all available here)")
	f.IntVar(&o.runs, "runs", 3, "runs of each mode")
	f.BoolVar(&o.cold, "cold", false, "drop the file's cached pages before each run (drop_caches as root, else posix_fadvise)")
	f.IntVar(&o.workers, "workers", loader.DefaultWorkers, "concurrent reads of the loader modes; reads in flight of the random mode")
	f.StringVar(&o.chunkSize, "chunk-size", "4MiB", "chunk size of the loader modes")
	f.StringVar(&o.blockSize, "block-size", "4KiB", "size of each read of the random mode")
	f.IntVar(&o.reads, "random-reads", bench.DefaultRandomReads, "number of reads of the random mode")
	f.IntVar(&o.device, "device", 0, "GPU index for the GPU modes")
	f.BoolVar(&o.asJSON, "json", false, "print JSON on stdout")
	o.remote.addFlags(f)
	return cmd
}

func modeHelp() string {
	var b strings.Builder
	for _, m := range bench.Help() {
		fmt.Fprintf(&b, "  %-14s %s\n", m[0], m[1])
	}
	return b.String()
}

type benchReport struct {
	File    string         `json:"file"`
	Bytes   int64          `json:"bytes"`
	Cache   string         `json:"cache"`
	Runs    int            `json:"runs"`
	Results []bench.Result `json:"results"`
	// Skipped names modes that did not run, with the reason: not
	// available here, or failed.
	Skipped map[string]string `json:"skipped,omitempty"`
}

func runBench(cmd *cobra.Command, o *benchOptions, path string) error {
	if err := errors.Join(intFlagIn("--runs", o.runs, 1, maxRuns), intFlagIn("--workers", o.workers, 1, loader.MaxWorkers),
		intFlagIn("--random-reads", o.reads, 1, maxRandomReads)); err != nil {
		return err
	}
	chunk, err := alignedSizeFlag("--chunk-size", o.chunkSize)
	if err != nil {
		return err
	}
	block, err := alignedSizeFlag("--block-size", o.blockSize)
	if err != nil {
		return err
	}
	if o.cold && vfs.IsURL(path) {
		return usagef("--cold drops a local file's pages; it does not apply to %s (drop the server's cache there)", path)
	}
	var names []string
	if o.modes != "" {
		for _, n := range strings.Split(o.modes, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	m, err := o.remote.mux(logger(cmd), path)
	if err != nil {
		return err
	}
	defer m.Close()
	bo := bench.Options{Workers: o.workers, ChunkSize: chunk, BlockSize: block, RandomReads: o.reads,
		Device: o.device, FS: m, Runs: o.runs, Cold: o.cold}
	sel, err := bench.Select(path, names, bo)
	if errors.Is(err, bench.ErrUnknownMode) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	defer sel.Close()
	stderr := infoOut(cmd)
	live := progress.IsTerminal(stderr)
	bo.OnRun = func(mode string, run int, s bench.Sample) {
		if live {
			fmt.Fprintf(stderr, "\r\033[K%s run %d: %.2f GiB/s", mode, run+1, float64(s.Bytes)/(1<<30)/s.Wall.Seconds())
		}
	}
	res, err := bench.Run(cmd.Context(), path, sel.Modes, bo)
	if live {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	rep := benchReport{File: path, Cache: res.Cache, Runs: o.runs, Results: res.Results, Skipped: sel.Skipped}
	maps.Copy(rep.Skipped, res.Skipped)
	if len(rep.Results) > 0 {
		rep.Bytes = rep.Results[0].Bytes
	}
	if len(rep.Skipped) == 0 {
		rep.Skipped = nil
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), rep)
	}
	return printBench(cmd.OutOrStdout(), rep)
}

func printBench(w io.Writer, r benchReport) error {
	fmt.Fprintf(w, "%s: %s, %s, %s per mode\n\n", r.File, humanize.Bytes(r.Bytes), r.Cache, humanize.Count(r.Runs, "run"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tGiB/s\tmin\tmax\tCPU s/GiB\tIOPS\tp50 ms\tp99 ms\t")
	for _, res := range r.Results {
		name := res.Mode
		if res.GDSMode != "" {
			name += " (" + res.GDSMode + ")" // compat mode is cuFile's POSIX fallback, not GPUDirect
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.3f\t%.0f\t%.3f\t%.3f\t\n", name, res.GiBPerS, res.MinGiBPerS, res.MaxGiBPerS,
			res.CPUSecondsPerGiB, res.IOPS, res.P50Ms, res.P99Ms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// One line per reason: "skipped gds, bounce: no GPU: ...".
	byReason := map[string][]string{}
	for name, why := range r.Skipped {
		byReason[why] = append(byReason[why], name)
	}
	for _, why := range slices.Sorted(maps.Keys(byReason)) {
		fmt.Fprintf(w, "skipped %s: %s\n", strings.Join(slices.Sorted(slices.Values(byReason[why])), ", "), why)
	}
	return nil
}
