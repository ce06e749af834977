package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gdsload/gdsload/bench"
	"github.com/gdsload/gdsload/loader"
	"github.com/spf13/cobra"
)

type benchOptions struct {
	modes     string
	runs      int
	cold      bool
	workers   int
	chunkSize string
	asJSON    bool
	device    int
	remote    remoteOptions
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
	f.IntVar(&o.workers, "workers", loader.DefaultWorkers, "concurrent reads of the loader modes")
	f.StringVar(&o.chunkSize, "chunk-size", "4MiB", "chunk size of the loader modes")
	f.IntVar(&o.device, "device", 0, "GPU index for the GPU modes")
	f.BoolVar(&o.asJSON, "json", false, "print JSON on stdout")
	o.remote.addFlags(f)
	return cmd
}

// allModes lists every mode this binary knows, available here or not; call
// release once the modes are no longer used.
func allModes(device int) (avail []bench.Mode, missing map[string]string, release func()) {
	gpu, missing, release := gpuBenchModes(device)
	return append(bench.HostModes(), gpu...), missing, release
}

func modeHelp() string {
	var b strings.Builder
	for _, m := range bench.HostModes() {
		fmt.Fprintf(&b, "  %-14s %s\n", m.Name, m.Help)
	}
	for _, m := range gpuModeHelp() {
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
	// Skipped names modes not available here, with the reason.
	Skipped map[string]string `json:"skipped,omitempty"`
}

func runBench(cmd *cobra.Command, o *benchOptions, path string) error {
	if err := errors.Join(intFlagIn("--runs", o.runs, 1, maxRuns), intFlagIn("--workers", o.workers, 1, maxWorkers)); err != nil {
		return err
	}
	chunk, err := chunkFlag(o.chunkSize)
	if err != nil {
		return err
	}
	var avail []bench.Mode
	var missing map[string]string
	if isRemote(path) {
		if o.cold {
			return usagef("--cold drops a local file's pages; it does not apply to %s (drop the server's cache there)", path)
		}
		avail, missing = remoteModes(&o.remote, o.device)
		defer o.remote.Close()
	} else {
		// The GPU libraries are opened only for a local file, the only
		// kind the GPU modes read.
		var release func()
		avail, missing, release = allModes(o.device)
		defer release()
	}
	modes := avail
	if o.modes != "" {
		modes = nil
		for _, name := range strings.Split(o.modes, ",") {
			name = strings.TrimSpace(name)
			m, ok := findMode(avail, name)
			if !ok {
				if why, known := missing[name]; known {
					return fmt.Errorf("mode %s is not available here: %s", name, why)
				}
				return usagef("unknown mode %q; modes: %s", name, modeNames(avail, missing))
			}
			modes = append(modes, m)
		}
	}
	stderr := cmd.ErrOrStderr()
	progress := isTerminal(stderr)
	results, how, err := bench.Run(cmd.Context(), path, modes, bench.Config{Workers: o.workers, ChunkSize: chunk}, bench.Options{
		Runs: o.runs, Cold: o.cold,
		OnRun: func(mode string, run int, s bench.Sample) {
			if progress {
				fmt.Fprintf(stderr, "\r\033[K%s run %d: %.2f GiB/s", mode, run+1, float64(s.Bytes)/(1<<30)/s.Wall.Seconds())
			}
		},
	})
	if progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	rep := benchReport{File: path, Cache: how, Runs: o.runs, Results: results}
	if len(results) > 0 {
		rep.Bytes = results[0].Bytes
	}
	if o.modes == "" && len(missing) > 0 {
		rep.Skipped = missing
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), rep)
	}
	return printBench(cmd.OutOrStdout(), rep)
}

// remoteModes are what an rdmafs:// PATH can be measured with: the loader
// streaming from the server into its host ring.
func remoteModes(r *remoteOptions, device int) ([]bench.Mode, map[string]string) {
	missing := map[string]string{}
	for _, m := range bench.HostModes() {
		if m.Name != "loader" {
			missing[m.Name] = "needs a local file"
		}
	}
	for _, m := range gpuModeHelp() {
		missing[m[0]] = "needs a local file"
	}
	loaderMode := bench.Mode{Name: "loader", Help: "the gdsload engine reading from the rdmafs server into its host ring",
		Run: func(ctx context.Context, url string, cfg bench.Config) (bench.Sample, error) {
			srcs, err := openRemote(ctx, url, r)
			if err != nil {
				return bench.Sample{}, err
			}
			return bench.RingLoad(ctx, srcs, cfg)
		}}
	return []bench.Mode{loaderMode}, missing
}

func findMode(modes []bench.Mode, name string) (bench.Mode, bool) {
	for _, m := range modes {
		if m.Name == name {
			return m, true
		}
	}
	return bench.Mode{}, false
}

func modeNames(avail []bench.Mode, missing map[string]string) string {
	var names []string
	for _, m := range avail {
		names = append(names, m.Name)
	}
	for n := range missing {
		names = append(names, n+" (unavailable)")
	}
	return strings.Join(names, ", ")
}

func printBench(w io.Writer, r benchReport) error {
	fmt.Fprintf(w, "%s: %s, %s, %d runs per mode\n\n", r.File, formatBytes(r.Bytes), r.Cache, r.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tGiB/s\tmin\tmax\tCPU s/GiB\tp50 ms\tp99 ms\t")
	for _, res := range r.Results {
		name := res.Mode
		if res.GDSMode != "" {
			name += " (" + res.GDSMode + ")" // compat mode is cuFile's POSIX fallback, not GPUDirect
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.3f\t%.2f\t%.2f\t\n", name, res.GiBPerS, res.MinGiBPerS, res.MaxGiBPerS,
			res.CPUSecondsPerGiB, res.P50Ms, res.P99Ms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// One line per reason: "skipped gds, bounce: no GPU: ...".
	byReason := map[string][]string{}
	for name, why := range r.Skipped {
		byReason[why] = append(byReason[why], name)
	}
	reasons := make([]string, 0, len(byReason))
	for why := range byReason {
		reasons = append(reasons, why)
	}
	sort.Strings(reasons)
	for _, why := range reasons {
		names := byReason[why]
		sort.Strings(names)
		fmt.Fprintf(w, "skipped %s: %s\n", strings.Join(names, ", "), why)
	}
	return nil
}
