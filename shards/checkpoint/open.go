package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
)

// Options tune Open. The zero value is usable.
type Options struct {
	// Direct says whether local files are opened with O_DIRECT:
	// loader.DirectAuto (the zero value) where the file system accepts
	// it, loader.DirectOn or fail, loader.DirectOff never.
	Direct loader.DirectMode
	// FS opens the checkpoint's files: local paths and any URL it
	// serves (rdmafs://, s3://). Nil: Open makes a vfs.Mux with its
	// defaults (rdmafs clients present GDSLOAD_TOKEN) and Close closes
	// it; a given FS stays the caller's to close, after the Checkpoint.
	FS *vfs.Mux
}

// Checkpoint is an opened checkpoint whose headers have been validated. It
// holds its files open until Close; Load may be called any number of times
// in between, also concurrently.
type Checkpoint struct {
	path     string
	files    []*shard
	metadata map[string]string
	ownFS    *vfs.Mux // made by Open, closed by Close
}

// shard is one opened file with its validated header. A .npy file is
// described by a header of one tensor, so every file loads the same way.
type shard struct {
	src    vfs.File
	header *safetensors.Header
}

// Open opens the checkpoint at path, a local path or a URL that opts.FS
// serves: a .safetensors file, a *.safetensors.index.json index (its
// shards are named relative to it), a .npy file (one tensor named after
// the file, without ".npy"), or a directory holding exactly one index or,
// without an index, exactly one .safetensors file. A missing path is an
// error matching fs.ErrNotExist. It opens every file and validates its header through
// the opened descriptor, so the header and the data a later Load reads
// are the same file (the loader verifies it did not change). For an index
// it also checks that the "weight_map" and the shards agree: every listed
// tensor is in the shard it is listed under, and every tensor of a shard
// is listed under that shard and appears in no other shard. Nothing is
// allocated. The caller must Close the Checkpoint.
func Open(ctx context.Context, path string, opts Options) (_ *Checkpoint, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &Checkpoint{path: path}
	if opts.FS == nil {
		if opts.FS, err = vfs.New(); err != nil {
			return nil, err
		}
		c.ownFS = opts.FS
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if c.path, err = resolve(ctx, opts.FS, path); err != nil {
		return nil, err
	}
	path = c.path
	kind := format(path)
	if kind != ".safetensors" && kind != ".npy" && kind != ".json" {
		// A temporary file or a content-addressed blob: read by content.
		if kind, err = sniff(ctx, opts.FS, path); err != nil {
			return nil, err
		}
	}
	switch kind {
	case ".safetensors":
		s, err := openSafetensors(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, s)
		c.metadata = s.header.Metadata
	case ".npy":
		s, err := openNPY(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, s)
	case ".json":
		if err := c.openIndex(ctx, opts); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("checkpoint %s: %w: want a .safetensors file, a .safetensors.index.json index, a .npy file or a directory holding one checkpoint", path, ErrFormat)
	}
	return c, nil
}

// IsCheckpointName reports whether path's name is that of a checkpoint
// file: a .safetensors file, a sharded checkpoint's
// *.safetensors.index.json, or a .npy file (letters of any case).
func IsCheckpointName(path string) bool {
	l := strings.ToLower(path)
	return strings.HasSuffix(l, ".safetensors") || strings.HasSuffix(l, ".safetensors.index.json") || strings.HasSuffix(l, ".npy")
}

// format returns the extension that decides how path is read.
func format(path string) string {
	base := vfs.Base(path)
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		return strings.ToLower(base[i:])
	}
	return ""
}

// sniff tells a file whose name does not say what it holds by its first
// bytes: ".npy" after the .npy magic, ".safetensors" where a header
// length that fits the file is followed by '{', else "" (not a
// checkpoint).
func sniff(ctx context.Context, m *vfs.Mux, path string) (string, error) {
	f, err := m.Open(ctx, path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var head [9]byte
	n, err := f.ReadAt(head[:], 0)
	if n < len(head) {
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("checkpoint %s: %w", path, err)
		}
		return "", nil
	}
	switch {
	case bytes.HasPrefix(head[:], []byte(npy.Magic)):
		return ".npy", nil
	case head[8] == '{' && binary.LittleEndian.Uint64(head[:8]) <= uint64(f.Size()-8):
		return ".safetensors", nil
	}
	return "", nil
}

// Resolve returns path itself, or for a directory (local or a URL
// opts.FS serves; nil: a Mux made for the call) the one checkpoint it
// holds, as Open and the Python face's load_file take it: its only
// *.safetensors.index.json or, without an index, its only .safetensors
// file. A directory holding none, or several, is an error wrapping
// ErrFormat that says which. Of opts, only FS is used.
func Resolve(ctx context.Context, path string, opts Options) (string, error) {
	m, done, err := vfs.OrNew(opts.FS)
	if err != nil {
		return "", err
	}
	defer done()
	return resolve(ctx, m, path)
}

// resolve turns a directory into the one checkpoint it holds.
func resolve(ctx context.Context, m *vfs.Mux, path string) (string, error) {
	st, err := m.Stat(ctx, path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return path, nil
	}
	// One listing for both kinds; an unreadable directory lists nothing,
	// as a glob would.
	ents, _ := m.List(ctx, path)
	var indexes, files []string // base names, sorted as List sorts
	for _, e := range ents {
		switch n := e.Rel; {
		case strings.HasSuffix(n, ".safetensors.index.json"):
			indexes = append(indexes, n)
		case strings.HasSuffix(n, ".safetensors"):
			files = append(files, n)
		}
	}
	if len(indexes) == 1 {
		return vfs.Join(path, indexes[0]), nil
	}
	if len(indexes) > 1 {
		return "", fmt.Errorf("checkpoint %s: %w: the directory holds %d indexes (%s); name the one to load", path, ErrFormat, len(indexes), strings.Join(indexes, ", "))
	}
	switch len(files) {
	case 1:
		return vfs.Join(path, files[0]), nil
	case 0:
		return "", fmt.Errorf("checkpoint %s: %w: the directory holds no .safetensors file and no .safetensors.index.json", path, ErrFormat)
	}
	return "", fmt.Errorf("checkpoint %s: %w: the directory holds %d .safetensors files and no index; name one file, or the *.safetensors.index.json of a sharded checkpoint", path, ErrFormat, len(files))
}

// openShard opens the file at path for loading and describes its data
// region with describe; a failure closes the file.
func openShard(ctx context.Context, path string, opts Options, describe func(vfs.File) (*safetensors.Header, error)) (*shard, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := opts.FS.Open(ctx, path, vfs.WithDirect(opts.Direct))
	if err != nil {
		return nil, err // names the path or URL
	}
	h, err := describe(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &shard{src: f, header: h}, nil
}

// openSafetensors opens one safetensors file and validates its header.
func openSafetensors(ctx context.Context, path string, opts Options) (*shard, error) {
	return openShard(ctx, path, opts, func(f vfs.File) (*safetensors.Header, error) {
		h, err := safetensors.ParseHeader(f, f.Size())
		var e *safetensors.Error
		if errors.As(err, &e) && e.Path == "" {
			e.Path = path
		}
		return h, err
	})
}

// Path returns the path of the checkpoint: the file or index opened (for a
// directory, the one it holds).
func (c *Checkpoint) Path() string { return c.path }

// File describes one data file of a checkpoint as its validated header
// says.
type File struct {
	// Path is the file's path or URL; for an index's shards, joined to
	// the index's directory.
	Path string
	// Tensors are in data-region order; Begin and End are relative to
	// DataOffset. A .npy file has one tensor, named after the file.
	Tensors []safetensors.TensorInfo
	// DataOffset is the file offset of the data region.
	DataOffset int64
	// Bytes is the length of the data region: the tensors' bytes.
	Bytes int64
}

// Files describes the checkpoint's data files in load order: the file
// itself, or an index's shards sorted by name. Loaded.Allocations follow
// the same order. The caller must not modify the tensors' shapes.
func (c *Checkpoint) Files() []File {
	out := make([]File, len(c.files))
	for i, s := range c.files {
		out[i] = File{Path: s.src.Name(), Tensors: s.header.Tensors, DataOffset: s.header.DataOffset, Bytes: s.header.DataLen}
	}
	return out
}

// Bytes returns the total size of the tensors' data in all files. A load
// reads slightly more: each file's head slack (under one alignment unit).
func (c *Checkpoint) Bytes() int64 {
	var n int64
	for _, s := range c.files {
		n += s.header.DataLen
	}
	return n
}

// Metadata is the checkpoint's free-form metadata: a safetensors file's
// "__metadata__" object, or a sharded checkpoint's index "metadata"
// (values that are not strings in JSON form, e.g. "total_size"); nil
// when there is none (always for .npy). The caller must not modify it.
func (c *Checkpoint) Metadata() map[string]string { return c.metadata }

// Close closes the checkpoint's files, and the vfs.Mux Open made when
// Options.FS was nil. It does not free what Load allocated; Loaded.Close
// does.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, s := range c.files {
		errs = append(errs, s.src.Close())
	}
	c.files = nil
	if c.ownFS != nil {
		errs = append(errs, c.ownFS.Close())
		c.ownFS = nil
	}
	return errors.Join(errs...)
}

// notExist reports whether err says a file is missing.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
