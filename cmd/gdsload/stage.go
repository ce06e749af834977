package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/stage"
	"github.com/spf13/cobra"
)

type stageOptions struct {
	ioFlags
	checksum string
	verify   string
	asJSON   bool
	dryRun   bool
	failFast bool
	reverify bool
	remote   remoteOptions
}

func newStageCmd() *cobra.Command {
	o := &stageOptions{}
	cmd := &cobra.Command{
		Use:   "stage [flags] SRC... DST",
		Short: "Copy checkpoints and shards onto node-local storage, verified, atomic and resumable",
		Long: `Stage copies files onto a local directory (node-local NVMe), or loads and
verifies them in GPU memory (DST gpu:N).

Sources are files, directories (their contents land directly in DST, like
rsync SRC/ DST), brace patterns ('shard-{000..009}.bin'), sharded checkpoints
through their *.safetensors.index.json (the index and every file it names),
and rdmafs://host:port/path URLs.

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
	opener := &cliOpener{mode: mode, remote: &o.remote}
	defer opener.Close()
	isGPU := dst == "gpu" || strings.HasPrefix(dst, "gpu:") // a directory so named: ./gpu:0
	if !isGPU {
		if err := stage.CheckDestination(srcs, dst); err != nil {
			return usageError{err}
		}
	}
	entries, err := stage.Expand(ctx, srcs, remoteLister{&o.remote})
	if err != nil {
		return err
	}
	if isGPU && o.dryRun {
		return usagef("--dry-run applies to directory destinations, not %s", dst)
	}
	if isGPU {
		t, err := parseTarget(dst)
		if err != nil || t.kind != "gpu" {
			return usagef("destination %q: want a directory or gpu:N", dst)
		}
		return stageToGPU(cmd, o, t, entries, mode, sum, chunk)
	}

	if o.dryRun {
		plan, err := stage.Preview(ctx, dst, entries, stage.Options{Opener: opener, ReadDirect: mode, Checksum: sum, Reverify: o.reverify})
		if err != nil {
			return err
		}
		return printPreview(cmd.OutOrStdout(), dst, plan, o.asJSON)
	}
	var bar *progress
	s, err := stage.Open(dst, stage.Options{
		Opener: opener, ReadDirect: mode, WriteDirect: mode, Workers: o.workers, ChunkSize: chunk,
		Checksum: sum, Verify: verify, OnProgress: func(n int64) { bar.Add(n) },
		FailFast: o.failFast, Reverify: o.reverify,
	})
	if err != nil {
		return err
	}
	defer s.Close()
	plan, err := s.Plan(ctx, entries)
	if err != nil {
		return err
	}
	bar = startProgress(cmd.ErrOrStderr(), "stage", plan.CopyBytes)
	res, err := s.Run(ctx, plan)
	bar.Stop()
	if res == nil {
		return err
	}
	// A partial stage prints its result, then fails with the list of
	// what could not be staged (exit 3).
	if o.asJSON {
		if perr := printJSON(cmd.OutOrStdout(), res); perr != nil {
			return perr
		}
	} else if perr := printStage(cmd.OutOrStdout(), res); perr != nil {
		return perr
	}
	return err
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
			fmt.Fprintf(w, "copy  %s  (%s)\n", e.Name, formatBytes(e.Bytes))
		}
	}
	_, err := fmt.Fprintf(w, "dry run: would copy %s (%s) to %s; %s already staged and verified; nothing changed\n",
		files(p.CopyFiles), formatBytes(p.CopyBytes), dst, files(len(entries)-p.CopyFiles))
	return err
}

// files counts files in words: "1 file", "2 files".
func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

func printStage(w io.Writer, r *stage.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "staged\t%s in %s to %s\n", formatBytes(r.Bytes), files(r.Files), r.Dest)
	fmt.Fprintf(tw, "copied\t%s, %s\n", files(r.Copied), formatBytes(r.CopiedBytes))
	fmt.Fprintf(tw, "skipped\t%s already staged and verified\n", files(r.Skipped))
	if r.Damaged > 0 {
		fmt.Fprintf(tw, "damaged\t%s changed in place since staged (re-verify): staged again\n", files(r.Damaged))
	}
	if r.Failed > 0 {
		fmt.Fprintf(tw, "failed\t%s could not be staged (listed below)\n", files(r.Failed))
	}
	fmt.Fprintf(tw, "time\t%.3f s\n", r.Seconds)
	fmt.Fprintf(tw, "bandwidth\t%.2f GiB/s\n", r.GiBPerS)
	fmt.Fprintf(tw, "verify\t%s, %s\n", r.Checksum, r.Verify)
	if r.RemovedTemps > 0 {
		fmt.Fprintf(tw, "cleaned\t%d temporary files of interrupted runs\n", r.RemovedTemps)
	}
	if r.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", r.Reason)
	}
	return tw.Flush()
}

// cliOpener opens stage sources with the command line's settings: local
// files with the --direct mode, rdmafs:// URLs through the remote clients,
// which Close hangs up.
type cliOpener struct {
	mode   loader.DirectMode
	remote *remoteOptions
}

func (c *cliOpener) Open(ctx context.Context, name string) (loader.Source, error) {
	if !isRemote(name) {
		// Stage reads every local source with O_DIRECT where the file
		// system takes it, small files too (load's small-file choice does
		// not apply): staged bytes come from the disk, not a cached copy.
		return loader.OpenFile(name, c.mode)
	}
	u, err := rdmafs.ParseURL(name)
	if err != nil {
		return nil, usageError{err}
	}
	cl, err := c.remote.client(ctx, u.Addr)
	if err != nil {
		return nil, err
	}
	f, err := cl.Open(ctx, strings.Trim(u.Path, "/")) // a directory since it was listed is refused
	if err != nil {
		return nil, err
	}
	return stagedRemote{remoteSource{File: f, url: name}}, nil
}

func (c *cliOpener) Close() { _ = c.remote.Close() }

// stagedRemote gives a remote file the modification time the stage
// journal needs to trust it on a rerun.
type stagedRemote struct{ remoteSource }

func (s stagedRemote) ModTime() time.Time { return s.Stat().ModTime() }

// remoteLister lists rdmafs:// URLs for stage.Expand: a file, or every
// file below a directory with its path relative to it.
type remoteLister struct{ r *remoteOptions }

func (l remoteLister) List(ctx context.Context, raw string) ([]stage.Entry, error) {
	u, _, files, err := listRemote(ctx, raw, l.r)
	if err != nil {
		return nil, err
	}
	root := strings.Trim(u.Path, "/")
	out := make([]stage.Entry, 0, len(files))
	for _, rf := range files {
		rel := path.Base(rf.name)
		if rf.name != root {
			rel = strings.TrimPrefix(rf.name, root+"/")
		}
		out = append(out, stage.Entry{Source: rdmafs.URL{Addr: u.Addr, Path: rf.name}.String(), Rel: rel, Size: rf.info.Size(), ModTime: rf.info.ModTime()})
	}
	return out, nil
}

// stageToGPU loads the entries into GPU memory through the same
// destination code as `load --to gpu:N` and checks their digests against
// any manifest.
func stageToGPU(cmd *cobra.Command, o *stageOptions, t target, entries []stage.Entry, mode loader.DirectMode, sum loader.Checksum, chunk int64) error {
	ctx := cmd.Context()
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Source
		if e.Expect != "" {
			sum = loader.ChecksumSHA256 // a manifest's digests are sha256
		}
	}
	srcs, err := openSources(ctx, names, mode, &o.remote)
	if err != nil {
		return err
	}
	defer srcs.Close()
	dst, err := openDestination(ctx, t, mode, srcs, chunk, o.workers, o.remote.verbs())
	if err != nil {
		return fmt.Errorf("staging into gpu:%d: %w", t.device, err)
	}
	defer dst.close()
	bar := startProgress(cmd.ErrOrStderr(), "stage gpu:"+strconv.Itoa(t.device), srcs.total())
	start := time.Now()
	lr, err := loader.Load(ctx, dst.jobs(srcs.sources), loader.Options{
		Workers: o.workers, ChunkSize: chunk, Checksum: sum,
		Reason: dst.reason, OnProgress: bar.Add,
	})
	bar.Stop()
	if err != nil {
		return err
	}
	res := &stage.Result{Dest: fmt.Sprintf("gpu:%d", t.device), Files: len(entries), Copied: len(entries),
		Checksum: sum, Verify: stage.VerifyDigest, Reason: lr.Reason}
	for i, e := range entries {
		f := lr.Files[i]
		d := f.Digest(sum)
		if e.Expect != "" && d != e.Expect {
			return fmt.Errorf("%s: the sha256 of the bytes loaded into gpu:%d is %s, but the manifest %s lists %s; the source is corrupt or the manifest stale",
				e.Source, t.device, d, e.Manifest, e.Expect)
		}
		res.Bytes += f.Bytes
		res.Entries = append(res.Entries, stage.FileResult{Name: e.Rel, Source: e.Source, Bytes: f.Bytes, Status: stage.StatusCopied,
			Checksum: sum, Digest: d, Manifest: e.Manifest, DirectRead: f.Direct, Reason: f.Reason})
	}
	res.CopiedBytes = res.Bytes
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.GiBPerS = float64(res.Bytes) / (1 << 30) / res.Seconds
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	return printStage(cmd.OutOrStdout(), res)
}
