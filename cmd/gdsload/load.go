package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/progress"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/stage"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/cache"
)

type loadOptions struct {
	ioFlags
	to       string
	route    string
	checksum string
	format   string
	verify   bool
	asJSON   bool
	from     string
	remote   remoteFlags
	// deviceMap places a checkpoint's tensors by name prefix
	// (PREFIX=N,...) with --to gpu:all or gpu:N,M,...
	deviceMap string
}

func newLoadCmd() *cobra.Command {
	o := &loadOptions{}
	cmd := &cobra.Command{
		Use:   "load [flags] PATH...",
		Short: "Load files or directories into host or GPU memory and report the path taken",
		Long: `Load reads every file (directories recursively, but for the ` + stage.SidecarName + `
folders in which stage keeps its journal; rdmafs://host:port/path and
s3://bucket/key or s3://bucket/prefix/ URLs too) into the destination and
reports bytes, time, bandwidth, CPU cost, chunk latency, and the path taken
with the reason for it. s3:// credentials, region and endpoint come from the
AWS environment (AWS_PROFILE, AWS_ACCESS_KEY_ID, AWS_REGION,
AWS_ENDPOINT_URL_S3); each chunk is one ranged GET (docs/S3.md).

--to host streams into a bounded ring of reused host buffers (gdsio CPUONLY);
--to gpu[:N] loads into device memory on GPU N through gds (cuFile) or bounce
(pinned buffers + async copies); auto picks a GPU path when one is usable and
says why not otherwise. --to gpu:all or gpu:N,M,... loads onto several GPUs
at once, each with its own workers and pinned ring on its NUMA node: whole
files balanced by bytes, or a checkpoint's tensors by --device-map; the
result has bytes, path and bandwidth per GPU.

One .safetensors file, *.safetensors.index.json or .npy file loads as a
checkpoint (--format auto): each file's data region into one allocation.
--checksum prints the digests of whole files as sha256sum does (names
escaped as it escapes them), for 'sha256sum -c'; a checkpoint's digests
cover its data regions only and are labelled with their byte ranges. Files that a shard manifest (index.json
beside them) lists are checked against it for size and SHA-256.

Between gds and bounce, the node's route profile (doctor --calibrate)
decides where it measured the first local PATH's file system with that GPU:
the faster route is taken, and the reason cites the figures and their date.`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, paths []string) error {
			roomForBlockingIO()
			if o.from != "" {
				listed, err := readFileList(cmd.InOrStdin(), o.from)
				if err != nil {
					return err
				}
				paths = append(paths, listed...)
			}
			if len(paths) == 0 {
				return usagef("give a PATH, or --files-from a list of them")
			}
			return runLoad(cmd, o, paths)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "host", "destination: host, gpu[:N], gpu:all, gpu:N,M,... (several GPUs at once, files balanced by bytes) or auto")
	f.StringVar(&o.deviceMap, "device-map", "", "with several GPUs, place a checkpoint's tensors by name prefix: PREFIX=N,... (longest prefix wins; an empty PREFIX matches all)")
	f.StringVar(&o.route, "path", "auto", "GPU path for --to gpu[:N]: auto (gds where cuFile runs in nvfs or p2pdma mode, else bounce), gds (also in cuFile's compat mode, its POSIX fallback), or bounce")
	o.ioFlags.add(f, "O_DIRECT for local files: auto (where the file system takes it, for files of 1 MiB or more; smaller ones through the page cache), on, or off (all through the page cache: faster for files already cached)")
	f.StringVar(&o.checksum, "checksum", "none", "digest of the bytes as they landed: none, sha256 or crc32c")
	f.StringVar(&o.format, "format", "auto", "raw (files as bytes), checkpoint (safetensors data regions, .npy tensors), or auto: checkpoint for one .safetensors, .safetensors.index.json or .npy PATH")
	f.BoolVar(&o.verify, "verify", true, "check files listed in a shard manifest (index.json beside them) for size and SHA-256")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON on stdout")
	f.StringVar(&o.from, "files-from", "", "also load the paths listed in this file, one per line (- for standard input)")
	o.remote.addFlags(f)
	o.remote.cache.addFlags(f) // --cache, --cache-limit
	return cmd
}

// readFileList reads the --files-from list name ("-": in).
func readFileList(in io.Reader, name string) ([]string, error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--files-from: %w", err)
		}
		defer f.Close()
		in = f
	}
	list, err := vfs.ReadList(in)
	if err != nil {
		return nil, fmt.Errorf("--files-from %s: %w", name, err)
	}
	return list, nil
}

func runLoad(cmd *cobra.Command, o *loadOptions, paths []string) error {
	mode, chunk, err := o.ioFlags.parse()
	if err != nil {
		return err
	}
	sum, err := loader.ParseChecksum(o.checksum)
	if err != nil {
		return usageError{err}
	}
	target, err := loader.ParseTarget(o.to)
	if err != nil {
		return usagef("--to: %v", err)
	}
	isCkpt := false
	switch {
	case o.format == "checkpoint" && len(paths) != 1:
		return usagef("--format checkpoint takes one PATH (a .safetensors file, an index or a .npy file), got %d", len(paths))
	case o.format == "checkpoint" || (o.format == "auto" && len(paths) == 1 && checkpoint.IsCheckpointName(paths[0])):
		isCkpt = true
	case o.format != "auto" && o.format != "raw":
		return usagef("--format %q: want auto, raw or checkpoint", o.format)
	}
	ctx := cmd.Context()
	m, err := o.remote.mux(logger(cmd), paths...)
	if err != nil {
		return err
	}
	defer m.Close()
	topts := []loader.TargetOption{loader.WithWorkers(o.workers), loader.WithChunkSize(chunk), loader.WithDirect(mode)}
	for _, p := range paths {
		if !vfs.IsURL(p) { // the measured route of the first local path's file system
			topts = append(topts, loader.WithRouteProfile(loader.DefaultRouteProfilePath(), p))
			break
		}
	}
	switch route := loader.Route(o.route); {
	case o.route == "auto":
	case route != loader.RouteGDS && route != loader.RouteBounce:
		return usagef("--path %q: want auto, gds or bounce", o.route)
	case target.Kind != loader.TargetGPU:
		return usagef("--path %s needs --to gpu[:N], gpu:all or gpu:N,M,..., got --to %s", o.route, o.to)
	default:
		topts = append(topts, loader.WithRoute(route))
	}
	if target.Multi() {
		return runLoadGPUs(cmd, o, paths, isCkpt, m, target, topts, loader.Options{Workers: o.workers, ChunkSize: chunk, Checksum: sum}, mode)
	}
	if o.deviceMap != "" {
		return usagef("--device-map needs several GPUs: --to gpu:all or gpu:N,M,...")
	}
	dst, err := loader.OpenTarget(target, topts...)
	if err != nil {
		return err
	}
	defer dst.Close()
	lopts := loader.Options{Workers: o.workers, ChunkSize: chunk, Checksum: sum}
	if isCkpt {
		return runLoadCheckpoint(cmd, o, paths[0], m, dst, mode, lopts)
	}
	files, err := m.OpenAll(ctx, paths, vfs.WithDirect(mode), vfs.WithSmallFilesBuffered(), vfs.WithoutDirs(stage.SidecarName))
	if err != nil {
		return err
	}
	defer files.Close()
	var checks stage.Checks
	if o.verify {
		if checks, err = stage.ManifestChecks(ctx, files.Names(), stage.Options{FS: m}); err != nil {
			return err
		}
		if len(checks) > 0 && sum == loader.ChecksumNone {
			lopts.Checksum = loader.ChecksumSHA256 // a manifest's digests are SHA-256
		}
	}
	if err := checks.CheckSizes(files.Sources()); err != nil {
		return err
	}
	bar := progress.Start(infoOut(cmd), "load", files.Size())
	lopts.OnProgress = bar.Add
	res, err := dst.Load(ctx, files.Sources(), lopts)
	bar.Stop()
	if err != nil {
		return err
	}
	if err := checks.CheckDigests(res.Files); err != nil {
		return err
	}
	logFiles(cmd, res)
	if o.asJSON {
		// Whole files: what was read from storage is what was loaded.
		return printJSON(cmd.OutOrStdout(), rawResult{loadCacheJSON{res, o.remote.cache.stats()}, res.Bytes})
	}
	return printLoad(cmd.OutOrStdout(), res, lopts.Checksum)
}

// checkpointResult is the JSON of a checkpoint load: the loader's result
// (the digest of each file covers its data region) and the tensors.
type checkpointResult struct {
	*loader.Result
	Checkpoint string       `json:"checkpoint"`
	Tensors    int          `json:"tensors"`
	Cache      *cache.Stats `json:"cache,omitempty"` // --cache
	// BytesRead is what was read from storage: headers and data regions.
	BytesRead int64 `json:"bytes_read"`
}

// rawResult is the JSON of a load of whole files.
type rawResult struct {
	loadCacheJSON
	BytesRead int64 `json:"bytes_read"`
}

// runLoadCheckpoint loads one checkpoint: each file's data region into its
// own allocation on dst, tensors as views.
func runLoadCheckpoint(cmd *cobra.Command, o *loadOptions, path string, m *vfs.Mux, dst *loader.Landing, mode loader.DirectMode, lopts loader.Options) error {
	ck, err := checkpoint.Open(cmd.Context(), path, checkpoint.Options{Direct: mode, FS: m})
	if err != nil {
		return err
	}
	defer ck.Close()
	bar := progress.Start(infoOut(cmd), "load", ck.Bytes())
	lopts.OnProgress, lopts.Reason = bar.Add, dst.Reason()
	l, err := ck.Load(cmd.Context(), dst.Allocator(len(ck.Files())), lopts)
	bar.Stop()
	if err != nil {
		return err
	}
	// GPU destinations hold cuFile handles on the checkpoint's files:
	// free them before the files close.
	defer l.Close()
	logFiles(cmd, l.Result)
	res := &checkpointResult{Result: l.Result, Checkpoint: ck.Path(), Tensors: len(l.Tensors), Cache: o.remote.cache.stats(),
		BytesRead: l.BytesRead}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "checkpoint     %s: %s\n", res.Checkpoint, humanize.Count(res.Tensors, "tensor"))
	return printLoad(cmd.OutOrStdout(), res.Result, lopts.Checksum)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printLoad(w io.Writer, r *loader.Result, sum loader.Checksum) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "loaded\t%s in %s\n", humanize.Bytes(r.Bytes), humanize.Count(len(r.Files), "file"))
	fmt.Fprintf(tw, "time\t%.3f s\n", r.Seconds)
	fmt.Fprintf(tw, "bandwidth\t%.2f GiB/s\n", r.GiBPerS)
	if r.Bytes >= 64<<20 {
		fmt.Fprintf(tw, "cpu\t%.3f s per GiB\n", r.CPUSecondsPerGiB)
	} else {
		// Per GiB of a few bytes is start-up cost blown up: say the total.
		fmt.Fprintf(tw, "cpu\t%.3f s\n", r.CPUSeconds)
	}
	fmt.Fprintf(tw, "chunk latency\tp50 %.2f ms, p99 %.2f ms (%s)\n", r.P50Ms, r.P99Ms, humanize.Count(r.Chunks, "chunk"))
	fmt.Fprintf(tw, "path\t%s\n", r.RouteLabel())
	if r.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", r.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if sum == loader.ChecksumNone {
		return nil
	}
	fmt.Fprintln(w)
	return writeSums(w, r.Files, sum)
}

// logFiles says, with -v, how each file landed and why.
func logFiles(cmd *cobra.Command, r *loader.Result) {
	log := logger(cmd)
	for _, f := range r.Files {
		log.Debug("loaded", "file", f.Name, "bytes", f.Bytes, "path", f.Route, "direct", f.Direct, "reason", f.Reason)
	}
}
