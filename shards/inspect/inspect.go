// Package inspect validates a checkpoint or dataset shard as strictly as a
// load would and describes what it holds, reading only what it must: what
// `gdsload inspect` prints. Files are local paths or URLs opened through a
// vfs.Mux.
//
//	.safetensors              tensors (name, dtype, shape, bytes) and metadata
//	.npy                      dtype, shape, order and data size
//	*.safetensors.index.json  shards, tensors per shard and total bytes; every
//	                          shard's header is read and checked against the
//	                          index's weight_map
//	.tar .tar.gz .tgz .tar.zst .tar.zstd .tzst
//	                          WebDataset shard: samples, extensions and how many
//	                          samples carry each, total and min/max sample bytes
//	                          (the whole shard is read and decompressed)
package inspect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/vfs"
)

// ErrUnknownType reports a file whose name is none of the kinds inspect
// describes.
var ErrUnknownType = errors.New("unknown file type: want .safetensors, .npy, .safetensors.index.json, or a WebDataset shard (.tar, .tar.gz, .tgz, .tar.zst)")

// Report describes one file: a *Safetensors, *NPY, *Index or *Shard. Its
// JSON form is what `gdsload inspect --json` prints; String is the text.
type Report interface {
	fmt.Stringer
	report()
}

// Options tune an inspection. The zero value reads local paths and the
// URLs a Mux with its defaults serves.
type Options struct {
	// FS opens the file: local paths and any URL it serves (rdmafs://,
	// s3://). Nil: a vfs.Mux with its defaults (rdmafs clients present
	// GDSLOAD_TOKEN), made for the call and closed with it.
	FS *vfs.Mux
}

// File validates and describes the file at url (a local path, or a URL
// opts.FS serves), by its name's extension. Invalid files give the format
// package's error, which names the file, the offset and the failed check;
// a directory is taken as a load takes it (checkpoint.Resolve: its only
// index, or its only .safetensors file); other directories, and a name of
// no known kind (ErrUnknownType), are refused.
func File(ctx context.Context, url string, opts Options) (Report, error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return nil, err
	}
	defer done()
	st, err := m.Stat(ctx, url)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		// The one checkpoint it holds, as a load takes the directory.
		p, err := checkpoint.Resolve(ctx, url, checkpoint.Options{FS: m})
		if err != nil {
			return nil, fmt.Errorf("inspect %s: is a directory, and not one holding a checkpoint a load would take (%w); name a file in it", url, err)
		}
		url = p
	}
	lower := strings.ToLower(vfs.Base(url))
	switch {
	case strings.HasSuffix(lower, ".index.json"):
		return index(ctx, m, url)
	case webdataset.IsShardName(lower):
		return shard(ctx, m, url)
	}
	rep, err := tensors(ctx, m, url)
	if errors.Is(err, ErrUnknownType) {
		return nil, fmt.Errorf("inspect %s: %w", url, err)
	}
	return rep, err
}

// Tensors validates the header of a .safetensors or .npy file (a local
// path, or a URL opts.FS serves) and describes it (*Safetensors or *NPY),
// reading only the header. Other extensions give ErrUnknownType.
func Tensors(ctx context.Context, url string, opts Options) (Report, error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return nil, err
	}
	defer done()
	return tensors(ctx, m, url)
}

func tensors(ctx context.Context, m *vfs.Mux, url string) (Report, error) {
	switch strings.ToLower(filepath.Ext(vfs.Base(url))) {
	case ".safetensors":
		return tensorsOf(ctx, m, url)
	case ".npy":
		return npyOf(ctx, m, url)
	}
	return nil, ErrUnknownType
}

// Safetensors describes a safetensors file.
type Safetensors struct {
	Path       string            `json:"-"`
	Format     string            `json:"format"` // "safetensors"
	Tensors    []Tensor          `json:"tensors"`
	Metadata   map[string]string `json:"metadata"`
	DataOffset int64             `json:"data_offset"` // file offset of the data region
	Bytes      int64             `json:"bytes"`       // length of the data region
}

// Tensor is one tensor of a Safetensors, in file order.
type Tensor struct {
	Name        string   `json:"name"`
	Dtype       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	Bytes       int64    `json:"bytes"`
	DataOffsets [2]int64 `json:"data_offsets"` // relative to data_offset, as in the header
}

func (*Safetensors) report() {}

func open(ctx context.Context, m *vfs.Mux, url string) (vfs.File, error) {
	return m.Open(ctx, url, vfs.WithDirect(loader.DirectOff))
}

func tensorsOf(ctx context.Context, m *vfs.Mux, url string) (*Safetensors, error) {
	f, err := open(ctx, m, url)
	if err != nil {
		return nil, &safetensors.Error{Path: url, Offset: -1, Kind: safetensors.ErrRead, Err: err}
	}
	defer f.Close()
	h, err := safetensors.ParseHeader(f, f.Size())
	if err != nil {
		var e *safetensors.Error
		if errors.As(err, &e) && e.Path == "" {
			e.Path = url
		}
		return nil, err
	}
	rep := &Safetensors{Path: url, Format: "safetensors", Tensors: make([]Tensor, len(h.Tensors)),
		Metadata: map[string]string{}, DataOffset: h.DataOffset, Bytes: h.DataLen}
	maps.Copy(rep.Metadata, h.Metadata)
	for i, t := range h.Tensors {
		rep.Tensors[i] = Tensor{Name: t.Name, Dtype: t.Dtype, Shape: jsonShape(t.Shape), Bytes: t.Bytes(), DataOffsets: [2]int64{t.Begin, t.End}}
	}
	return rep, nil
}

func (r *Safetensors) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: safetensors, %s, %s at offset %d\n", r.Path, humanize.Count(len(r.Tensors), "tensor"), humanize.Count(r.Bytes, "data byte"), r.DataOffset)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDTYPE\tSHAPE\tBYTES\tDATA_OFFSETS")
	for _, t := range r.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t[%d, %d)\n", t.Name, t.Dtype, t.Shape, t.Bytes, t.DataOffsets[0], t.DataOffsets[1])
	}
	tw.Flush()
	if len(r.Metadata) > 0 {
		b.WriteString("metadata:\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
		for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
			fmt.Fprintf(tw, "  %s\t= %s\n", k, r.Metadata[k])
		}
		tw.Flush()
	}
	return b.String()
}

// NPY describes a .npy file.
type NPY struct {
	Path         string  `json:"-"`
	Format       string  `json:"format"`  // "npy"
	Version      string  `json:"version"` // "1.0", "2.0" or "3.0"
	Dtype        string  `json:"dtype"`   // the descr, e.g. "<f4"
	FortranOrder bool    `json:"fortran_order"`
	Shape        []int64 `json:"shape"`
	DataOffset   int64   `json:"data_offset"`
	Bytes        int64   `json:"bytes"` // length of the data
}

func (*NPY) report() {}

func npyOf(ctx context.Context, m *vfs.Mux, url string) (*NPY, error) {
	f, err := open(ctx, m, url)
	if err != nil {
		return nil, &npy.Error{Path: url, Offset: -1, Kind: npy.ErrRead, Err: err}
	}
	defer f.Close()
	h, err := npy.ParseHeader(f, f.Size())
	if err != nil {
		var e *npy.Error
		if errors.As(err, &e) && e.Path == "" {
			e.Path = url
		}
		return nil, err
	}
	return &NPY{Path: url, Format: "npy", Version: fmt.Sprintf("%d.%d", h.Version[0], h.Version[1]), Dtype: h.Descr,
		FortranOrder: h.FortranOrder, Shape: jsonShape(h.Shape), DataOffset: h.DataOffset, Bytes: h.DataLen}, nil
}

func (r *NPY) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: npy %s\n", r.Path, r.Version)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dtype\t%s\n", r.Dtype)
	fmt.Fprintf(tw, "fortran_order\t%t\n", r.FortranOrder)
	fmt.Fprintf(tw, "shape\t%v\n", r.Shape)
	fmt.Fprintf(tw, "bytes\t%d at offset %d\n", r.Bytes, r.DataOffset)
	tw.Flush()
	return b.String()
}

// Index describes a sharded checkpoint's index.
type Index struct {
	Path    string      `json:"-"`
	Format  string      `json:"format"` // "safetensors-index"
	Files   []IndexFile `json:"files"`
	Tensors int         `json:"tensors"`
	Bytes   int64       `json:"bytes"` // tensor bytes in all shards
}

// IndexFile is one shard of an Index, in load order.
type IndexFile struct {
	Name    string `json:"name"` // as the weight_map names it
	Path    string `json:"path"`
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"` // length of the shard's data region
}

func (*Index) report() {}

// index opens a sharded checkpoint the way a load does (every shard
// present, every header valid, weight_map and shards in agreement) and
// describes its shards.
func index(ctx context.Context, m *vfs.Mux, url string) (*Index, error) {
	c, err := checkpoint.Open(ctx, url, checkpoint.Options{Direct: loader.DirectOff, FS: m})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rep := &Index{Path: url, Format: "safetensors-index", Files: []IndexFile{}, Bytes: c.Bytes()}
	dir := vfs.Dir(url)
	for _, f := range c.Files() {
		rep.Files = append(rep.Files, IndexFile{Name: relative(dir, f.Path), Path: f.Path, Tensors: len(f.Tensors), Bytes: f.Bytes})
		rep.Tensors += len(f.Tensors)
	}
	return rep, nil
}

// relative names p relative to directory dir, slash-separated.
func relative(dir, p string) string {
	dl, derr := vfs.Parse(dir)
	pl, perr := vfs.Parse(p)
	if derr != nil || perr != nil {
		return p
	}
	if dl.IsLocal() {
		if rel, err := filepath.Rel(dl.Path, pl.Path); err == nil {
			return filepath.ToSlash(rel)
		}
		return p
	}
	if dl.Path == "" {
		return pl.Path
	}
	return strings.TrimPrefix(pl.Path, dl.Path+"/")
}

func (r *Index) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: safetensors index, %s, %s, %s (%s)\n",
		r.Path, humanize.Count(len(r.Files), "shard"), humanize.Count(r.Tensors, "tensor"), humanize.Count(r.Bytes, "byte"), humanize.Bytes(r.Bytes))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tTENSORS\tBYTES")
	for _, f := range r.Files {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", f.Name, f.Tensors, f.Bytes)
	}
	tw.Flush()
	return b.String()
}

// Shard describes a WebDataset shard.
type Shard struct {
	Path        string `json:"-"`
	Format      string `json:"format"`      // "webdataset"
	Compression string `json:"compression"` // "none", "gzip" or "zstd", from the magic bytes
	FileBytes   int64  `json:"file_bytes"`  // size stored
	Samples     int    `json:"samples"`
	// Extensions maps each extension to the number of samples having it.
	Extensions     map[string]int `json:"extensions"`
	Bytes          int64          `json:"bytes"`            // field bytes of all samples
	MinSampleBytes int64          `json:"min_sample_bytes"` // 0 when there are no samples
	MaxSampleBytes int64          `json:"max_sample_bytes"`
}

func (*Shard) report() {}

// shard reads a whole WebDataset shard, with the reader's default memory
// caps, and counts its samples and fields.
func shard(ctx context.Context, m *vfs.Mux, url string) (*Shard, error) {
	f, err := open(ctx, m, url)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := webdataset.NewReader(bufio.NewReaderSize(vfs.NewReader(ctx, f), 1<<20), webdataset.Auto, webdataset.WithName(url))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep := &Shard{Path: url, Format: "webdataset", Compression: r.Compression().String(), FileBytes: f.Size(), Extensions: map[string]int{}}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
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
	return rep, nil
}

func (r *Shard) String() string {
	var b strings.Builder
	comp := r.Compression + " compressed"
	if r.Compression == "none" {
		comp = "uncompressed"
	}
	fmt.Fprintf(&b, "%s: WebDataset shard, %s, %s on disk\n", r.Path, comp, humanize.Count(r.FileBytes, "byte"))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "samples\t%d\n", r.Samples)
	fmt.Fprintf(tw, "bytes\t%d (%s)\n", r.Bytes, humanize.Bytes(r.Bytes))
	fmt.Fprintf(tw, "sample bytes\tmin %d, max %d\n", r.MinSampleBytes, r.MaxSampleBytes)
	tw.Flush()
	if len(r.Extensions) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EXTENSION\tSAMPLES")
		for _, ext := range slices.Sorted(maps.Keys(r.Extensions)) {
			fmt.Fprintf(tw, "%s\t%d\n", ext, r.Extensions[ext])
		}
		tw.Flush()
	}
	return b.String()
}

// jsonShape makes a scalar's shape encode as [] rather than null.
func jsonShape(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}
