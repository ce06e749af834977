package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/gdsload/gdsload/vfs"
)

// SaveTensor is one tensor for SaveSafetensors: its bytes (little-endian,
// packed as the dtype requires) in host memory (loader.HostMemory) or in
// device memory (a loader.DeviceReader, such as a GPU destination).
type SaveTensor struct {
	Name  string
	Dtype string // a safetensors dtype name: "F32", "BF16", "F8_E4M3", ...
	Shape []int64
	Data  loader.SaveSource
}

// SaveSafetensors writes tensors as a safetensors file at path with
// loader.SaveFile's discipline (a temporary name, fsync, rename, directory
// fsync: never a partial file under path). The header is what
// shards/safetensors writes (tensors by decreasing dtype size then name,
// metadata first, padded to 8 bytes), so the file reads back with
// safetensors.Open and the reference library. It fails before creating
// anything when a tensor is invalid (unknown dtype, duplicate or reserved
// name, size overflow) or when its data is not dtype × shape bytes long,
// and refuses a path that is a URL (ErrURLDestination) or a directory
// (syscall.EISDIR).
func SaveSafetensors(ctx context.Context, path string, tensors []SaveTensor, metadata map[string]string, opts loader.SaveOptions) (*loader.SaveResult, error) {
	if vfs.IsURL(path) {
		return nil, fmt.Errorf("save %s: %w: save to a local file and upload it with the store's own tools", path, ErrURLDestination)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		// Refused before writing anything, with the errno callers map
		// (a rename onto the folder would fail only after the write).
		return nil, fmt.Errorf("save %s: %w; give a file name, such as %s", path,
			&fs.PathError{Op: "save", Path: path, Err: syscall.EISDIR}, filepath.Join(path, "model.safetensors"))
	}
	specs := make([]safetensors.TensorSpec, len(tensors))
	data := make(map[string]loader.SaveSource, len(tensors))
	for i, t := range tensors {
		specs[i] = safetensors.TensorSpec{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape}
		data[t.Name] = t.Data
	}
	layout, header, err := safetensors.EncodeHeader(specs, metadata)
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", path, err)
	}
	parts := make([]loader.SaveSource, 0, len(layout)+1)
	parts = append(parts, loader.HostMemory(header))
	for _, ti := range layout {
		src := data[ti.Name]
		if src == nil || src.Size() != ti.Bytes() {
			have := int64(0)
			if src != nil {
				have = src.Size()
			}
			return nil, fmt.Errorf("save %s: tensor %q: %s %v needs %d bytes, its data has %d", path, ti.Name, ti.Dtype, ti.Shape, ti.Bytes(), have)
		}
		parts = append(parts, src)
	}
	return loader.SaveFile(ctx, path, loader.Concat(parts...), opts)
}

// Save writes the loaded tensors, wherever they live (host or GPU memory),
// as one safetensors file at path with SaveSafetensors: a sharded
// checkpoint loaded this way is saved merged. A checkpoint loaded to a
// GPU, changed there, and saved back never passes through a Go slice of
// its own: GPU views are copied through pinned buffers or written with
// cuFileWrite.
func (l *Loaded) Save(ctx context.Context, path string, metadata map[string]string, opts loader.SaveOptions) (*loader.SaveResult, error) {
	tensors, err := l.saveTensors(path)
	if err != nil {
		return nil, err
	}
	return SaveSafetensors(ctx, path, tensors, metadata, opts)
}

// SaveSharded writes the loaded tensors as a sharded checkpoint in dir,
// as the function SaveSharded does.
func (l *Loaded) SaveSharded(ctx context.Context, dir string, metadata map[string]string, opts ShardedOptions) (*ShardedResult, error) {
	tensors, err := l.saveTensors(dir)
	if err != nil {
		return nil, err
	}
	return SaveSharded(ctx, dir, tensors, metadata, opts)
}

// saveTensors describes the loaded tensors for saving them to where.
func (l *Loaded) saveTensors(where string) ([]SaveTensor, error) {
	if l.closed {
		return nil, fmt.Errorf("save %s: the checkpoint's memory was freed (Close)", where)
	}
	tensors := make([]SaveTensor, len(l.Tensors))
	for i, t := range l.Tensors {
		st := SaveTensor{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape}
		if b := l.Bytes(t.Name); b != nil {
			st.Data = loader.HostMemory(b)
		} else if rb, ok := l.Allocations[t.File].Dest.(loader.ReadBacker); ok {
			st.Data = loader.DeviceRegion(rb, t.Offset, t.Bytes)
		} else {
			return nil, fmt.Errorf("save %s: tensor %q lives in memory that can be neither read nor copied back", where, t.Name)
		}
		tensors[i] = st
	}
	return tensors, nil
}
