//go:build cgo

package checkpoint

import (
	"context"
	"testing"

	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/safetensors"
	"github.com/stretchr/testify/require"
)

// Whole tensors and slices fetch into GPU memory through the bounce and
// the gds paths: read back, each equals the naive gather, and every
// allocation is freed on Close (withFakeGPU checks).
func TestFetchIntoGPU(t *testing.T) {
	const chunk = 64 << 10
	for _, path := range []loader.Route{loader.RouteBounce, loader.RouteGDS} {
		t.Run(string(path), func(t *testing.T) {
			f := withFakeGPU(t)
			s := writeSharded(t)
			c, drv := f.openFor(t, s, path)
			want := s.want()
			rows := []safetensors.DimSlice{{Start: 10, Step: 1, Count: 200}, {Step: 1, Count: 257}}
			cols := []safetensors.DimSlice{{Start: 0, Step: 3, Count: 100}, {Start: 5, Step: 2, Count: 100}}
			reqs := []Request{{Name: "embed.bias"}, {Name: "embed.weight", Slice: rows}, {Name: "embed.weight", Slice: cols}}
			got, err := c.Fetch(context.Background(), reqs, gpuAllocator(f.device(t), drv, chunk), loader.Options{ChunkSize: chunk, Workers: 4}, FetchOptions{})
			require.NoError(t, err)
			defer func() { require.NoError(t, got.Close()) }()
			require.Equal(t, path, got.Result.Route)
			for i, r := range reqs {
				p := got.Pieces[i]
				buf := make([]byte, p.Plan.Size)
				require.NoError(t, p.Dest.(loader.ReadBacker).ReadBack(context.Background(), 0, buf))
				p.Dest = loader.NewHostBuffer(buf)
				sel := r.Slice
				if sel == nil {
					sel = []safetensors.DimSlice{{Step: 1, Count: want[r.Name].Shape[0]}}
				}
				require.Equal(t, gather(want[r.Name], sel), selected(p), r.Name)
			}
		})
	}
}
