package stage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/vfs"
)

// ToGPU stages entries into GPU memory instead of a directory, as `gdsload
// stage SRC... gpu:N` does: every file is loaded, in one load, into one
// device allocation on target (loader.OpenTarget's policy and route,
// rdma for rdmafs over verbs; for several GPUs, gpu:all or gpu:N,M,...,
// loader.OpenGPUs: files balanced by bytes, every GPU at once), and the digest of the bytes as they landed
// (read back from the GPU) is checked against the manifest that lists the
// file. The memory is freed when ToGPU returns: the stage proves the files
// load and are intact on that GPU, and warms the path. Sources open
// through opts.FS with ReadDirect; Workers, ChunkSize, Checksum and
// OnProgress apply as for a directory.
func ToGPU(ctx context.Context, entries []Entry, target loader.Target, opts Options) (_ *Result, err error) {
	opts = opts.withDefaults()
	if opts.FS == nil {
		if opts.FS, err = vfs.New(); err != nil {
			return nil, err
		}
		defer opts.FS.Close()
	}
	sum := opts.Checksum
	for _, e := range entries {
		if e.Expect != "" {
			sum = loader.ChecksumSHA256 // a manifest's digests are sha256
		}
	}
	topts := []loader.TargetOption{loader.WithWorkers(min(opts.Workers, loader.MaxWorkers)),
		loader.WithChunkSize(opts.ChunkSize), loader.WithDirect(opts.ReadDirect)}
	var load func(ctx context.Context, srcs []loader.Source, lopts loader.Options) ([]loader.FileResult, string, error)
	if target.Multi() {
		set, err := loader.OpenGPUs(target, topts...)
		if err != nil {
			return nil, fmt.Errorf("staging: %w", err)
		}
		defer set.Close()
		load = func(ctx context.Context, srcs []loader.Source, lopts loader.Options) ([]loader.FileResult, string, error) {
			r, err := set.Load(ctx, srcs, lopts)
			if err != nil {
				return nil, "", err
			}
			var reasons []string
			for _, g := range r.GPUs {
				reasons = append(reasons, fmt.Sprintf("gpu:%d: %s", g.Device, g.Reason))
			}
			return r.InSourceOrder(), strings.Join(reasons, "; "), nil
		}
	} else {
		l, err := loader.OpenTarget(target, topts...)
		if err != nil {
			return nil, fmt.Errorf("staging: %w", err)
		}
		defer l.Close()
		load = func(ctx context.Context, srcs []loader.Source, lopts loader.Options) ([]loader.FileResult, string, error) {
			r, err := l.Load(ctx, srcs, lopts)
			if err != nil {
				return nil, "", err
			}
			return r.Files, r.Reason, nil
		}
	}
	files := make(vfs.Files, 0, len(entries))
	defer func() { _ = files.Close() }()
	for _, e := range entries {
		f, err := opts.FS.Open(ctx, e.Source, vfs.WithDirect(opts.ReadDirect), vfs.WithSmallFilesBuffered())
		if err != nil {
			return nil, sourceError(e.Source, err)
		}
		files = append(files, f)
	}
	start := time.Now()
	landed, reason, err := load(ctx, files.Sources(), loader.Options{Workers: opts.Workers, ChunkSize: opts.ChunkSize,
		Checksum: sum, OnProgress: opts.OnProgress})
	if err != nil {
		return nil, err
	}
	res := &Result{Dest: target.String(), Files: len(entries), Copied: len(entries), Checksum: sum, Verify: VerifyDigest, Reason: reason}
	for i, e := range entries {
		f := landed[i] // in entry order
		d := f.Digest(sum)
		if e.Expect != "" && d != e.Expect {
			return nil, fmt.Errorf("%s: the sha256 of the bytes loaded into %s is %s, but the manifest %s lists %s; the source is corrupt or the manifest stale",
				e.Source, target, d, e.Manifest, e.Expect)
		}
		res.Bytes += f.Bytes
		res.Entries = append(res.Entries, FileResult{Name: e.Rel, Source: e.Source, Bytes: f.Bytes, Status: StatusCopied,
			Checksum: sum, Digest: d, Manifest: e.Manifest, DirectRead: f.Direct, Reason: f.Reason})
	}
	res.CopiedBytes = res.Bytes
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.GiBPerS = float64(res.Bytes) / (1 << 30) / res.Seconds
	}
	return res, nil
}
