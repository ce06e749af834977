package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdsload/gdsload/internal/testenv"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

// openOrSkip opens path, skipping the test where O_DIRECT was asked for
// and the file system refuses it (testenv's probe, not the loader, says).
func openOrSkip(t *testing.T, path string, mode loader.DirectMode) *Checkpoint {
	t.Helper()
	if mode == loader.DirectOn {
		testenv.NeedDirectIO(t, filepath.Dir(path))
	}
	c, err := Open(context.Background(), path, Options{Direct: mode})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// A sharded checkpoint loads into host memory byte for byte, with and
// without O_DIRECT, in chunks smaller than a file so reads start at
// unaligned offsets and cross chunk boundaries.
func TestLoadShardedIntoHost(t *testing.T) {
	s := writeSharded(t)
	want := s.want()
	for _, mode := range []loader.DirectMode{loader.DirectOff, loader.DirectOn} {
		t.Run("direct="+mode.String(), func(t *testing.T) {
			c := openOrSkip(t, s.index, mode)
			var names []string
			for name := range s.shards {
				names = append(names, filepath.Join(s.dir, name))
			}
			slices.Sort(names)
			files := c.Files()
			require.Len(t, files, len(names))
			for i, f := range files {
				require.Equal(t, names[i], f.Path)
				require.Len(t, f.Tensors, len(s.shards[filepath.Base(f.Path)]))
			}
			var total int64
			for _, tt := range want {
				total += int64(len(tt.Data))
			}
			require.Equal(t, total, c.Bytes())

			l, err := c.Load(context.Background(), HostAllocator, loader.Options{
				ChunkSize: 64 << 10, Workers: 4, Checksum: loader.ChecksumSHA256,
			})
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()

			require.Len(t, l.Allocations, len(names))
			require.Len(t, l.Result.Files, len(names))
			for i, a := range l.Allocations {
				file, err := os.ReadFile(names[i])
				require.NoError(t, err)
				h, err := safetensors.ParseHeader(bytes.NewReader(file), int64(len(file)))
				require.NoError(t, err)
				require.Equal(t, names[i], a.File)
				require.GreaterOrEqual(t, a.Alignment, int64(loader.DefaultAlignment))
				require.Zero(t, a.FileOffset%a.Alignment, "reads start aligned")
				require.LessOrEqual(t, a.FileOffset, h.DataOffset)
				require.Less(t, h.DataOffset-a.FileOffset, a.Alignment, "head slack under one alignment unit")
				landed := a.Dest.(*loader.HostBuffer).Bytes()
				slack := h.DataOffset - a.FileOffset
				require.Equal(t, file[h.DataOffset:], landed[slack:int64(len(file))-a.FileOffset], "allocation holds the data region at its file offset modulo the alignment")
				sum := sha256.Sum256(file[h.DataOffset:])
				require.Equal(t, hex.EncodeToString(sum[:]), l.Result.Files[i].SHA256, "the digest covers the data region")
				require.Equal(t, mode == loader.DirectOn, l.Result.Files[i].Direct, l.Result.Files[i].Reason)

				for _, ti := range h.Tensors {
					v, ok := l.Tensor(ti.Name)
					require.True(t, ok, ti.Name)
					require.Equal(t, i, v.File, ti.Name)
					fileOff := h.DataOffset + ti.Begin
					require.Zero(t, (v.Offset-fileOff)%a.Alignment, "%s: view offset %d, file offset %d", ti.Name, v.Offset, fileOff)
				}
			}
			require.Len(t, l.Tensors, len(want))
			for _, v := range l.Tensors {
				w := want[v.Name]
				require.Equal(t, w.Dtype, v.Dtype, v.Name)
				require.True(t, slices.Equal(w.Shape, v.Shape), "%s: shape %v, want %v", v.Name, v.Shape, w.Shape)
				require.Equal(t, int64(len(w.Data)), v.Bytes, v.Name)
				require.Equal(t, w.Data, l.Bytes(v.Name), v.Name)
			}
			_, ok := l.Tensor("no.such.tensor")
			require.False(t, ok)
			require.Nil(t, l.Bytes("no.such.tensor"))
		})
	}
}

// A single file and a directory holding a checkpoint open like the file or
// index inside them.
func TestOpenSingleFileAndDirectory(t *testing.T) {
	s := writeSharded(t)
	c := openOrSkip(t, s.dir, loader.DirectAuto)
	require.Equal(t, s.index, c.Path())
	require.Len(t, c.Files(), 3)

	dir := t.TempDir()
	rng := newRNG()
	want := []safetensors.TensorData{tensor(rng, "a", "F32", 5, 3), tensor(rng, "b", "BOOL", 9)}
	path := writeSafetensors(t, dir, "model.safetensors", want, nil)
	for _, p := range []string{path, dir} {
		c := openOrSkip(t, p, loader.DirectAuto)
		require.Equal(t, path, c.Path())
		require.Len(t, c.Files(), 1)
		require.Equal(t, path, c.Files()[0].Path)
		l, err := c.Load(context.Background(), HostAllocator, loader.Options{})
		require.NoError(t, err)
		for _, w := range want {
			require.Equal(t, w.Data, l.Bytes(w.Name))
		}
		require.NoError(t, l.Close())
		require.Nil(t, l.Bytes("a"), "no bytes after Close")
		require.NoError(t, l.Close(), "second Close does nothing")
	}
}

// countingAllocator hands out host memory, failing the nth allocation
// (counting from 1; 0 never), and counts what is still allocated.
type countingAllocator struct {
	failAt, calls, live int
}

func (a *countingAllocator) alloc(size int64) (loader.Destination, func() error, error) {
	a.calls++
	if a.calls == a.failAt {
		return nil, nil, os.ErrDeadlineExceeded
	}
	dst, free, err := HostAllocator(size)
	if err != nil {
		return nil, nil, err
	}
	a.live++
	return dst, func() error { a.live--; return free() }, nil
}

// A failed allocation, a file changed after Open and a cancelled context
// all fail the load and leave nothing allocated.
func TestLoadFailureFreesAllocations(t *testing.T) {
	t.Run("allocation fails", func(t *testing.T) {
		s := writeSharded(t)
		c := openOrSkip(t, s.index, loader.DirectAuto)
		a := &countingAllocator{failAt: 2}
		_, err := c.Load(context.Background(), a.alloc, loader.Options{})
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.ErrorContains(t, err, c.Files()[1].Path)
		require.Equal(t, 2, a.calls)
		require.Zero(t, a.live)
	})
	t.Run("file truncated after open", func(t *testing.T) {
		s := writeSharded(t)
		c := openOrSkip(t, s.index, loader.DirectAuto)
		victim := c.Files()[0].Path
		st, err := os.Stat(victim)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(victim, st.Size()-100))
		a := &countingAllocator{}
		_, err = c.Load(context.Background(), a.alloc, loader.Options{ChunkSize: 64 << 10})
		require.ErrorIs(t, err, loader.ErrChanged)
		require.ErrorContains(t, err, victim)
		require.Equal(t, 3, a.calls)
		require.Zero(t, a.live)
	})
	t.Run("cancelled", func(t *testing.T) {
		s := writeSharded(t)
		c := openOrSkip(t, s.index, loader.DirectAuto)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a := &countingAllocator{}
		_, err := c.Load(ctx, a.alloc, loader.Options{})
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, a.calls)
		_, err = Open(ctx, s.index, Options{})
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("closed checkpoint", func(t *testing.T) {
		s := writeSharded(t)
		c, err := Open(context.Background(), s.index, Options{})
		require.NoError(t, err)
		require.NoError(t, c.Close())
		_, err = c.Load(context.Background(), HostAllocator, loader.Options{})
		require.ErrorContains(t, err, "closed")
		require.True(t, strings.Contains(err.Error(), s.index))
	})
}
