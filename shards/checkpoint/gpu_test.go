//go:build cgo

// The CUDA test double is a C library loaded through cgo.

package checkpoint

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/fakecuda"
	"github.com/gdsload/gdsload/loader"
	"github.com/stretchr/testify/require"
)

// fakeGPULibs is the CUDA test double as a checkpoint test uses it.
type fakeGPULibs struct{ *fakecuda.Session }

// withFakeGPU resets the double, applies cmds, and checks at the end of the
// test that everything taken from it was given back (fakecuda.Use).
func withFakeGPU(t *testing.T, cmds ...string) *fakeGPULibs {
	t.Helper()
	return &fakeGPULibs{fakecuda.Use(t, cmds...)}
}

func (f *fakeGPULibs) device(t *testing.T) *cufile.Device {
	t.Helper()
	rt, err := cufile.OpenRuntime(f.Libs.Config())
	require.NoError(t, err)
	d, err := rt.Device(0)
	require.NoError(t, err)
	return d
}

func (f *fakeGPULibs) driver(t *testing.T) *cufile.Driver {
	t.Helper()
	c, err := cufile.OpenCuFile(f.Libs.Config())
	require.NoError(t, err)
	return c.Driver()
}

// openFor opens s's checkpoint for a load through route: gds with O_DIRECT
// and the double's cuFile driver, bounce with no driver.
func (f *fakeGPULibs) openFor(t *testing.T, s *sharded, route loader.Route) (*Checkpoint, *cufile.Driver) {
	t.Helper()
	if route == loader.RouteGDS {
		return openOrSkip(t, s.index, loader.DirectOn), f.driver(t)
	}
	return openOrSkip(t, s.index, loader.DirectAuto), nil
}

// gpuAllocator makes one GPU destination per file: bounce, or gds when drv
// is not nil.
func gpuAllocator(dev *cufile.Device, drv *cufile.Driver, chunk int64) Allocator {
	path := loader.RouteBounce
	if drv != nil {
		path = loader.RouteGDS
	}
	alloc := loader.GPUAllocator(path, loader.GPUConfig{Device: dev, ChunkSize: chunk, Buffers: 4}, drv)
	return func(size int64) (loader.Destination, func() error, error) {
		d, err := alloc(size)
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	}
}

// A sharded checkpoint loads into GPU memory through the bounce and the gds
// paths; every tensor read back from its device allocation at its view
// offset equals what was encoded.
func TestLoadShardedIntoGPU(t *testing.T) {
	const chunk = 64 << 10
	for _, path := range []loader.Route{loader.RouteBounce, loader.RouteGDS} {
		t.Run(string(path), func(t *testing.T) {
			f := withFakeGPU(t)
			s := writeSharded(t)
			c, drv := f.openFor(t, s, path)
			unaligned := f.Control.Counter("cufile_unaligned")
			l, err := c.Load(context.Background(), gpuAllocator(f.device(t), drv, chunk), loader.Options{
				ChunkSize: chunk, Workers: 4, Reason: "test",
			})
			require.NoError(t, err)
			// The data regions start mid-block; the gds reads still start
			// at 4 KiB-aligned file offsets and device addresses.
			require.Equal(t, unaligned, f.Control.Counter("cufile_unaligned"), "cuFile reads at unaligned offsets")
			defer func() { require.NoError(t, l.Close()) }() // before the checkpoint: gds handles use its descriptors
			require.Equal(t, path, l.Result.Route, "the route is the allocations' own")
			for _, a := range l.Allocations {
				require.Regexp(t, `^gpu:0$`, a.Dest.Kind())
			}
			want := s.want()
			require.Len(t, l.Tensors, len(want))
			for _, v := range l.Tensors {
				require.Nil(t, l.Bytes(v.Name), "device memory has no host bytes")
				got := make([]byte, v.Bytes)
				rb := l.Allocations[v.File].Dest.(loader.ReadBacker)
				require.NoError(t, rb.ReadBack(context.Background(), v.Offset, got))
				require.Equal(t, want[v.Name].Data, got, v.Name)
			}
			if path == loader.RouteGDS {
				require.Positive(t, f.Control.Counter("cufile_reads"), "the gds path read through cuFile")
			}
		})
	}
}

// When device memory runs out on a later file, the load fails naming that
// file, and the allocations made for earlier files are freed.
func TestLoadGPUOutOfMemoryFreesEarlierFiles(t *testing.T) {
	s := writeSharded(t)
	c := openOrSkip(t, s.index, loader.DirectAuto)
	st, err := os.Stat(c.Files()[0].Path)
	require.NoError(t, err)
	first := (st.Size() + loader.DefaultAlignment - 1) / loader.DefaultAlignment * loader.DefaultAlignment
	f := withFakeGPU(t, fmt.Sprintf("mem=%d", first+100)) // the first shard fits, the second does not
	_, err = c.Load(context.Background(), gpuAllocator(f.device(t), nil, 64<<10), loader.Options{ChunkSize: 64 << 10})
	require.ErrorIs(t, err, cufile.ErrOutOfMemory)
	require.ErrorContains(t, err, c.Files()[1].Path)
	require.Zero(t, f.Control.Counter("allocs"))
}
