package checkpoint

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/npy"
	"github.com/stretchr/testify/require"
)

func writeNPY(t *testing.T, dir, name string, a npy.Array) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, npy.Encode(&buf, a))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

func randomBytes(n int) []byte {
	rng := newRNG()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// A .npy file loads as one tensor named after the file, with its dtype in
// safetensors' names; layouts that are the same in C and Fortran order
// are accepted.
func TestLoadNPY(t *testing.T) {
	for _, tc := range []struct {
		name, descr string
		fortran     bool
		shape       []int64
		itemSize    int
		dtype       string
	}{
		{"weights", "<f4", false, []int64{3, 1001}, 4, "F32"},
		{"ids", "<i8", true, []int64{1, 77, 1}, 8, "I64"},
		{"mask", "|b1", false, []int64{4099}, 1, "BOOL"},
		{"bytes", "|u1", false, []int64{}, 1, "U8"},
		{"half", "<f2", false, []int64{0, 3}, 2, "F16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.itemSize
			for _, d := range tc.shape {
				n *= int(d)
			}
			data := randomBytes(n)
			path := writeNPY(t, t.TempDir(), tc.name+".npy", npy.Array{Descr: tc.descr, FortranOrder: tc.fortran, Shape: tc.shape, Data: data})
			c := openOrSkip(t, path, loader.DirectAuto)
			require.Equal(t, int64(n), c.Bytes())
			l, err := c.Load(context.Background(), HostAllocator, loader.Options{ChunkSize: 4096})
			require.NoError(t, err)
			defer l.Close()
			require.Len(t, l.Tensors, 1)
			v := l.Tensors[0]
			require.Equal(t, tc.name, v.Name)
			require.Equal(t, tc.dtype, v.Dtype)
			require.Equal(t, tc.shape, v.Shape)
			require.Equal(t, int64(n), v.Bytes)
			h, err := npy.ParseFile(path)
			require.NoError(t, err)
			a := l.Allocations[0]
			require.Zero(t, (v.Offset-h.DataOffset)%a.Alignment, "view offset %d, file offset %d", v.Offset, h.DataOffset)
			require.Equal(t, data, l.Bytes(tc.name))
		})
	}
}

// Arrays whose bytes would be misread as a row-major little-endian tensor
// are refused at Open with the reason and the fix.
func TestOpenNPYNotViewable(t *testing.T) {
	for _, tc := range []struct {
		descr   string
		fortran bool
		shape   []int64
		size    int
		says    string
	}{
		{">f4", false, []int64{2}, 4, "big-endian"},
		{"<f4", true, []int64{2, 3}, 4, "Fortran"},
		{"<f16", false, []int64{2}, 16, "no tensor dtype"},
		{"<c16", false, []int64{2}, 16, "no tensor dtype"},
	} {
		t.Run(tc.descr, func(t *testing.T) {
			n := tc.size
			for _, d := range tc.shape {
				n *= int(d)
			}
			path := writeNPY(t, t.TempDir(), "a.npy", npy.Array{Descr: tc.descr, FortranOrder: tc.fortran, Shape: tc.shape, Data: make([]byte, n)})
			_, err := Open(context.Background(), path, Options{})
			require.ErrorIs(t, err, ErrNotViewable)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tc.says)
		})
	}
}
