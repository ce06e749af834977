package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/progress"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/stage"
)

type stageOptions struct {
	ioFlags
	checksum string
	verify   string
	asJSON   bool
	dryRun   bool
	failFast bool
	reverify bool
	remote   remoteFlags
}

func newStageCmd() *cobra.Command {
	o := &stageOptions{}
	cmd := &cobra.Command{
		Use:   "stage [flags] SRC... DST",
		Short: "Copy checkpoints and shards onto node-local storage, verified, atomic and resumable",
		Long: `Stage copies files onto a local directory (node-local NVMe), or loads and
verifies them in GPU memory (DST gpu:N; gpu:all or gpu:N,M,... for several
GPUs at once, files balanced by bytes). URLs are sources only: a DST written
as s3:// or rdmafs:// is refused.

Sources are files, directories (their contents land directly in DST, like
rsync SRC/ DST), brace patterns ('shard-{000..009}.bin'), sharded checkpoints
through their *.safetensors.index.json (the index and every file it names),
local or at rdmafs://host:port/path and s3://bucket/key (or prefix/) URLs.

Reads and writes run in parallel with O_DIRECT where the file systems take
it. Each file is written under a temporary name beginning with a dot beside
its final name, synced, verified and renamed, so an interruption never
leaves a partial file under a final name. The digest of the bytes read
(sha256, or --checksum crc32c) is checked against a shards manifest
(index.json) when one lists the file, and against the bytes written;
--verify readback also re-reads each written file before its rename.

A rerun after an interruption leaves files already staged and verified
untouched and copies the rest; a source whose size or modification time
changed is staged again; --reverify re-hashes the files already staged and
stages again any that changed in place. The journal and lock live in
DST/` + stage.SidecarName + `/.

A source that cannot be read (or changed, or does not match its manifest)
does not stop the others, as with rsync and rclone: they are staged, the
failures are listed, and the exit code is 3 (partial). --fail-fast stops at
the first failure instead (exit 1).`,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			roomForBlockingIO()
			return runStage(cmd, o, a[:len(a)-1], a[len(a)-1])
		},
	}
	f := cmd.Flags()
	o.ioFlags.add(f, "O_DIRECT reads and writes: auto, on or off")
	f.StringVar(&o.checksum, "checksum", "sha256", "digest of every file: sha256 or crc32c (files a manifest lists use sha256)")
	f.StringVar(&o.verify, "verify", "digest", "digest, or readback to re-read each written file before its rename")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON on stdout")
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be copied and what is already staged, and change nothing")
	f.BoolVar(&o.failFast, "fail-fast", false, "stop at the first source that cannot be staged (default: stage the others, list the failures, exit 3)")
	f.BoolVar(&o.reverify, "reverify", false, "re-hash files already staged and stage again those that no longer match their recorded digest")
	o.remote.addFlags(f)
	o.remote.cache.addFlags(f) // --cache, --cache-limit
	return cmd
}

func runStage(cmd *cobra.Command, o *stageOptions, srcs []string, dst string) error {
	mode, chunk, err := o.ioFlags.parse()
	if err != nil {
		return err
	}
	sum, err := loader.ParseChecksum(o.checksum)
	if err != nil || sum == loader.ChecksumNone {
		return usagef("--checksum %q: want sha256 or crc32c (staging always verifies)", o.checksum)
	}
	verify, err := stage.ParseVerify(o.verify)
	if err != nil {
		return usageError{err}
	}
	ctx := cmd.Context()
	m, err := o.remote.mux(logger(cmd), srcs...)
	if err != nil {
		return err
	}
	defer m.Close()
	isGPU := dst == "gpu" || strings.HasPrefix(dst, "gpu:") // a directory so named: ./gpu:0
	if !isGPU {
		if err := stage.CheckDestination(srcs, dst); err != nil {
			return usageError{err}
		}
	}
	var bar *progress.Bar
	opts := stage.Options{FS: m, ReadDirect: mode, WriteDirect: mode, Workers: o.workers, ChunkSize: chunk,
		Checksum: sum, Verify: verify, OnProgress: func(n int64) { bar.Add(n) }, FailFast: o.failFast, Reverify: o.reverify}
	entries, err := stage.Expand(ctx, srcs, opts)
	if err != nil {
		return err
	}
	var res *stage.Result
	var runErr error // a partial stage's: its result is printed first
	switch {
	case isGPU && o.dryRun:
		return usagef("--dry-run applies to directory destinations, not %s", dst)
	case isGPU:
		t, err := loader.ParseTarget(dst)
		if err != nil || t.Kind != loader.TargetGPU {
			return usagef("destination %q: want a directory, gpu:N, gpu:N,M,... or gpu:all", dst)
		}
		var total int64
		for _, e := range entries {
			total += e.Size
		}
		bar = progress.Start(infoOut(cmd), "stage "+t.String(), total)
		res, err = stage.ToGPU(ctx, entries, t, opts)
		bar.Stop()
		if err != nil {
			return err
		}
	case o.dryRun:
		plan, err := stage.Preview(ctx, dst, entries, opts)
		if err != nil {
			return err
		}
		return printPreview(cmd.OutOrStdout(), dst, plan, o.asJSON)
	default:
		s, err := stage.Open(dst, opts)
		if err != nil {
			return err
		}
		defer s.Close()
		plan, err := s.Plan(ctx, entries)
		if err != nil {
			return err
		}
		bar = progress.Start(infoOut(cmd), "stage", plan.CopyBytes)
		res, runErr = s.Run(ctx, plan)
		bar.Stop()
		if res == nil {
			return runErr
		}
	}
	log := logger(cmd)
	for _, e := range res.Entries {
		log.Debug(e.Status, "file", e.Name, "source", e.Source, "manifest", e.Manifest, "direct_read", e.DirectRead, "direct_write", e.DirectWrite, "reason", e.Reason)
	}
	// A partial stage prints its result, then fails with the list of
	// what could not be staged (exit 3).
	if o.asJSON {
		if perr := printJSON(cmd.OutOrStdout(), stageCacheJSON{res, o.remote.cache.stats()}); perr != nil {
			return perr
		}
	} else if perr := printStage(cmd.OutOrStdout(), res); perr != nil {
		return perr
	}
	return runErr
}

// previewJSON is stage --dry-run --json.
type previewJSON struct {
	Dest      string               `json:"dest"`
	CopyFiles int                  `json:"copy_files"`
	CopyBytes int64                `json:"copy_bytes"`
	SkipFiles int                  `json:"skip_files"`
	Entries   []stage.PlannedEntry `json:"entries"`
	DryRun    bool                 `json:"dry_run"`
}

func printPreview(w io.Writer, dst string, p *stage.Plan, asJSON bool) error {
	entries := p.Entries()
	if asJSON {
		return printJSON(w, previewJSON{Dest: dst, CopyFiles: p.CopyFiles, CopyBytes: p.CopyBytes,
			SkipFiles: len(entries) - p.CopyFiles, Entries: entries, DryRun: true})
	}
	for _, e := range entries {
		if e.Action == "copy" {
			fmt.Fprintf(w, "copy  %s  (%s)\n", e.Name, humanize.Bytes(e.Bytes))
		}
	}
	_, err := fmt.Fprintf(w, "dry run: would copy %s (%s) to %s; %s already staged and verified; nothing changed\n",
		humanize.Count(p.CopyFiles, "file"), humanize.Bytes(p.CopyBytes), dst, humanize.Count(len(entries)-p.CopyFiles, "file"))
	return err
}

func printStage(w io.Writer, r *stage.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch {
	case r.Failed == 0:
		fmt.Fprintf(tw, "staged\t%s in %s to %s\n", humanize.Bytes(r.Bytes), humanize.Count(r.Files, "file"), r.Dest)
	case r.Failed == r.Files:
		fmt.Fprintf(tw, "staged\tnothing to %s: %s could not be staged (listed below)\n", r.Dest, humanize.Count(r.Failed, "file"))
	default:
		var failedBytes int64
		for _, e := range r.Entries {
			if e.Status == stage.StatusFailed {
				failedBytes += e.Bytes
			}
		}
		fmt.Fprintf(tw, "staged\t%s in %d of %s to %s; %d could not be staged (listed below)\n",
			humanize.Bytes(r.Bytes-failedBytes), r.Files-r.Failed, humanize.Count(r.Files, "file"), r.Dest, r.Failed)
	}
	fmt.Fprintf(tw, "copied\t%s, %s\n", humanize.Count(r.Copied, "file"), humanize.Bytes(r.CopiedBytes))
	fmt.Fprintf(tw, "skipped\t%s already staged and verified\n", humanize.Count(r.Skipped, "file"))
	if r.Damaged > 0 {
		fmt.Fprintf(tw, "damaged\t%s changed in place since staged (re-verify): staged again\n", humanize.Count(r.Damaged, "file"))
	}
	if r.Failed > 0 {
		fmt.Fprintf(tw, "failed\t%s could not be staged (listed below)\n", humanize.Count(r.Failed, "file"))
	}
	fmt.Fprintf(tw, "time\t%.3f s\n", r.Seconds)
	fmt.Fprintf(tw, "bandwidth\t%.2f GiB/s\n", r.GiBPerS)
	fmt.Fprintf(tw, "verify\t%s, %s\n", r.Checksum, r.Verify)
	if r.RemovedTemps > 0 {
		fmt.Fprintf(tw, "cleaned\t%s of interrupted runs\n", humanize.Count(r.RemovedTemps, "temporary file"))
	}
	if r.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", r.Reason)
	}
	return tw.Flush()
}
