//go:build cgo

package checkpoint

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/loader"
)

func TestDeviceMapLongestPrefixWins(t *testing.T) {
	m := DeviceMap{"": 0, "layer.": 1, "layer.1": 2}
	for name, want := range map[string]int{"embed": 0, "layer.0.w": 1, "layer.1.w": 2, "layer.10.w": 2} {
		d, ok := m.Device(name)
		require.True(t, ok)
		assert.Equal(t, want, d, name)
	}
	_, ok := DeviceMap{"a": 1}.Device("b")
	assert.False(t, ok)
}

// A sharded checkpoint onto four GPUs at once, by file balanced by bytes
// and by a device map: every tensor byte-exact on the GPU it was placed on.
func TestLoadGPUsPlacesTensors(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    DeviceMap
		want map[string]int // device per tensor, nil: by bytes
	}{
		{name: "by-bytes"},
		{name: "device-map", m: DeviceMap{"": 0, "embed.": 1, "layer.0.": 2, "layer.0.scale": 3},
			want: map[string]int{"embed.weight": 1, "embed.bias": 1, "odd": 0, "layer.0.w": 2, "layer.0.scale": 3, "layer.0.empty": 2, "head": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withFakeGPU(t, "devices=4")
			s := writeSharded(t)
			c := openOrSkip(t, s.index, loader.DirectAuto)
			set, err := loader.OpenGPUs(loader.Target{Kind: loader.TargetGPU, AllDevices: true}, loader.WithCuFileConfig(f.Libs.Config()),
				loader.WithWorkers(2), loader.WithChunkSize(64<<10))
			require.NoError(t, err)
			defer func() { require.NoError(t, set.Close()) }()
			on, err := c.LoadGPUs(context.Background(), set, tc.m, loader.Options{})
			require.NoError(t, err)
			defer func() { require.NoError(t, on.Close()) }()
			want := s.want()
			require.Len(t, on.Devices, len(want))
			if tc.want != nil {
				assert.Equal(t, tc.want, on.Devices)
			} else {
				// Each file whole on one GPU.
				for _, ts := range s.shards {
					for _, tt := range ts {
						assert.Equal(t, on.Devices[ts[0].Name], on.Devices[tt.Name], tt.Name)
					}
				}
			}
			seen := 0
			for _, p := range on.Parts {
				check := func(name string, dst loader.Destination, off, n int64) {
					assert.Equal(t, on.Devices[name], p.Device, name)
					require.Equal(t, "gpu:"+string(rune('0'+p.Device)), dst.Kind())
					got := make([]byte, n)
					require.NoError(t, dst.(loader.ReadBacker).ReadBack(context.Background(), off, got))
					require.Equal(t, want[name].Data, got, name)
					seen++
				}
				if p.Loaded != nil {
					for _, v := range p.Loaded.Tensors {
						check(v.Name, p.Loaded.Allocations[v.File].Dest, v.Offset, v.Bytes)
					}
				}
				if p.Fetched != nil {
					for _, pc := range p.Fetched.Pieces {
						check(pc.Name, pc.Dest, pc.Plan.Base, int64(len(want[pc.Name].Data)))
					}
				}
			}
			assert.Equal(t, len(want), seen)
			assert.Len(t, on.Result.GPUs, 4)
		})
	}
}
