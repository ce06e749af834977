package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/spf13/cobra"
)

type inspectOptions struct {
	asJSON bool
}

func newInspectCmd() *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect [flags] FILE",
		Short: "Validate a checkpoint or dataset shard and describe what it holds",
		Long: `Inspect validates a file's headers as strictly as a load would and describes
it, reading only what it must:

  .safetensors              tensors (name, dtype, shape, bytes) and metadata
  .npy                      dtype, shape, order and data size
  *.safetensors.index.json  shards, tensors per shard and total bytes; every
                            shard's header is read and checked against the
                            index's weight_map
  .tar .tar.gz .tgz .tar.zst .tar.zstd .tzst
                            WebDataset shard: samples, extensions and how many
                            samples carry each, total and min/max sample bytes
                            (the whole shard is read and decompressed)

An invalid file exits with status 1 and says what is wrong and where.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runInspect(cmd, o, a[0])
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the description as JSON on stdout")
	return cmd
}

func runInspect(cmd *cobra.Command, o *inspectOptions, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("inspect %s: is a directory; name a file in it", path)
	}
	var rep any
	var text string
	lower := strings.ToLower(path)
	switch {
	case strings.HasSuffix(lower, ".index.json"):
		rep, text, err = inspectIndex(cmd.Context(), path)
	case webdataset.IsShardName(lower):
		rep, text, err = inspectShard(cmd.Context(), path)
	default:
		rep, text, err = inspectTensorFile(path)
		if errors.Is(err, errNotTensorFile) {
			return fmt.Errorf("inspect %s: unknown file type: want .safetensors, .npy, .safetensors.index.json, or a WebDataset shard (.tar, .tar.gz, .tgz, .tar.zst)", path)
		}
	}
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), rep)
	}
	_, err = io.WriteString(cmd.OutOrStdout(), text)
	return err
}

// indexReport is the --json form of an inspected sharded checkpoint index.
type indexReport struct {
	Format  string            `json:"format"` // "safetensors-index"
	Files   []indexFileReport `json:"files"`
	Tensors int               `json:"tensors"`
	Bytes   int64             `json:"bytes"` // tensor bytes in all shards
}

// indexFileReport is one shard of an indexReport, in load order.
type indexFileReport struct {
	Name    string `json:"name"` // as the weight_map names it
	Path    string `json:"path"`
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"` // length of the shard's data region
}

// inspectIndex opens a sharded checkpoint the way a load does (every shard
// present, every header valid, weight_map and shards in agreement) and
// reports its shards.
func inspectIndex(ctx context.Context, path string) (any, string, error) {
	c, err := checkpoint.Open(ctx, path, checkpoint.Options{Direct: loader.DirectOff})
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	rep := &indexReport{Format: "safetensors-index", Files: []indexFileReport{}, Bytes: c.Bytes()}
	dir := filepath.Dir(path)
	for _, f := range c.Files() {
		name := f.Path
		if rel, err := filepath.Rel(dir, f.Path); err == nil {
			name = filepath.ToSlash(rel)
		}
		rep.Files = append(rep.Files, indexFileReport{Name: name, Path: f.Path, Tensors: len(f.Tensors), Bytes: f.Bytes})
		rep.Tensors += len(f.Tensors)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: safetensors index, %d shards, %d tensors, %d bytes (%s)\n",
		path, len(rep.Files), rep.Tensors, rep.Bytes, formatBytes(rep.Bytes))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tTENSORS\tBYTES")
	for _, f := range rep.Files {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", f.Name, f.Tensors, f.Bytes)
	}
	tw.Flush()
	return rep, b.String(), nil
}

// shardReport is the --json form of an inspected WebDataset shard.
type shardReport struct {
	Format      string `json:"format"`      // "webdataset"
	Compression string `json:"compression"` // "none", "gzip" or "zstd", from the magic bytes
	FileBytes   int64  `json:"file_bytes"`  // size on disk
	Samples     int    `json:"samples"`
	// Extensions maps each extension to the number of samples having it.
	Extensions     map[string]int `json:"extensions"`
	Bytes          int64          `json:"bytes"`            // field bytes of all samples
	MinSampleBytes int64          `json:"min_sample_bytes"` // 0 when there are no samples
	MaxSampleBytes int64          `json:"max_sample_bytes"`
}

// inspectShard reads a whole WebDataset shard, with the reader's default
// memory caps, and counts its samples and fields.
func inspectShard(ctx context.Context, path string) (any, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	r, err := webdataset.NewReader(f, webdataset.Auto, webdataset.WithName(path))
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	rep := &shardReport{Format: "webdataset", Compression: r.Compression().String(), FileBytes: st.Size(), Extensions: map[string]int{}}
	for {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		s, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		size := s.Size()
		if rep.Samples == 0 || size < rep.MinSampleBytes {
			rep.MinSampleBytes = size
		}
		rep.MaxSampleBytes = max(rep.MaxSampleBytes, size)
		rep.Samples++
		rep.Bytes += size
		for _, fld := range s.Fields {
			rep.Extensions[fld.Ext]++
		}
	}
	var b strings.Builder
	comp := rep.Compression + " compressed"
	if rep.Compression == "none" {
		comp = "uncompressed"
	}
	fmt.Fprintf(&b, "%s: WebDataset shard, %s, %d bytes on disk\n", path, comp, rep.FileBytes)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "samples\t%d\n", rep.Samples)
	fmt.Fprintf(tw, "bytes\t%d (%s)\n", rep.Bytes, formatBytes(rep.Bytes))
	fmt.Fprintf(tw, "sample bytes\tmin %d, max %d\n", rep.MinSampleBytes, rep.MaxSampleBytes)
	tw.Flush()
	if len(rep.Extensions) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EXTENSION\tSAMPLES")
		for _, ext := range slices.Sorted(maps.Keys(rep.Extensions)) {
			fmt.Fprintf(tw, "%s\t%d\n", ext, rep.Extensions[ext])
		}
		tw.Flush()
	}
	return rep, b.String(), nil
}
