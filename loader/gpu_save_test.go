package loader

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/cufile"
)

// Saving GPU memory: the gds destination writes itself with cuFileWrite,
// the bounce destination is copied back through pinned host buffers. Both
// give the bytes that were loaded, under the final name only once whole.
func TestSaveFromGPU(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gds   bool
		route Route
	}{
		{"gds", true, RouteGDS},
		{"bounce", false, RouteBounce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withFakeGPU(t, "mode=nvfs")
			name := writeRandom(t, t.TempDir(), 3<<20+4097, 7)
			want := readFile(t, name)
			src, err := OpenFile(name, DirectOn)
			require.NoError(t, err)
			defer src.Close()
			cfg := GPUConfig{Device: f.device(t, 0), Size: int64(len(want)), ChunkSize: 1 << 20, Buffers: 4}
			var dst interface {
				Destination
				SaveSource
				Close() error
			}
			if tc.gds {
				dst, err = NewGPUDirectDestination(GPUDirectConfig{GPUConfig: cfg, Driver: f.driver(t)})
			} else {
				dst, err = NewGPUBounceDestination(cfg)
			}
			require.NoError(t, err)
			defer func() { require.NoError(t, dst.Close()) }()
			_, err = Load(context.Background(), []Job{WholeFile(src, dst)}, Options{Workers: 3, ChunkSize: 1 << 20})
			require.NoError(t, err)

			out := filepath.Join(t.TempDir(), "saved.bin")
			res, err := SaveFile(context.Background(), out, dst, SaveOptions{Direct: DirectOn, ChunkSize: 1 << 20, Checksum: ChecksumSHA256})
			require.NoError(t, err)
			require.Equal(t, tc.route, res.Route)
			if tc.gds {
				require.Equal(t, cufile.ModeNVFS, res.GDSMode, "the result says which mode cuFile wrote in")
			} else {
				require.Empty(t, res.GDSMode)
			}
			require.Equal(t, sha256hex(want), res.Digest)
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, sha256hex(want), sha256hex(got))
			ents, err := os.ReadDir(filepath.Dir(out))
			require.NoError(t, err)
			require.Len(t, ents, 1, "no temporary file left")
		})
	}
}

func TestSaveFromGPUWriteFailureLeavesNothing(t *testing.T) {
	f := withFakeGPU(t, "mode=nvfs")
	dst, err := NewGPUDirectDestination(GPUDirectConfig{
		GPUConfig: GPUConfig{Device: f.device(t, 0), Size: 2 << 20}, Driver: f.driver(t)})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	require.NoError(t, f.Control.Do("fault=cufile_io"))
	dir := t.TempDir()
	_, err = SaveFile(context.Background(), filepath.Join(dir, "saved.bin"), dst, SaveOptions{Direct: DirectOn})
	require.Error(t, err)
	require.Contains(t, err.Error(), "cuFileWrite")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents, "neither the final name nor a temporary file")
}

// pinWatch is a GPU destination whose ReadBack notes how much host memory
// the double holds pinned while the save copies.
type pinWatch struct {
	*GPUBounce
	f   *fakeGPULibs
	max int64
}

func (p *pinWatch) ReadBack(ctx context.Context, off int64, b []byte) error {
	p.max = max(p.max, p.f.Counter("pinned"))
	return p.GPUBounce.ReadBack(ctx, off, b)
}

// The bounce save copies device memory into pinned buffers: SaveFile pins
// its pool for the save and unpins it afterwards.
func TestSaveFromGPUPinsItsBuffers(t *testing.T) {
	f := withFakeGPU(t)
	dst, err := NewGPUBounceDestination(GPUConfig{Device: f.device(t, 0), Size: 3 << 20, ChunkSize: 1 << 20, Buffers: 2})
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	base := f.Counter("pinned")
	w := &pinWatch{GPUBounce: dst, f: f}
	_, err = SaveFile(context.Background(), filepath.Join(t.TempDir(), "out.bin"), w, SaveOptions{ChunkSize: 1 << 20})
	require.NoError(t, err)
	require.Greater(t, w.max, base, "the save's buffers were pinned while it copied")
	require.Equal(t, base, f.Counter("pinned"), "and unpinned after")
}
