package loader

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Settle keeps the device bytes and frees what only the load needed: no
// pinned buffer and no cuFile handle remains, the source can close, and a
// later load sets them up again.
func TestGPUSettle(t *testing.T) {
	for _, path := range []Route{RouteBounce, RouteGDS} {
		t.Run(string(path), func(t *testing.T) {
			f := withFakeGPU(t)
			name := writeRandom(t, t.TempDir(), 3<<20+5, 4)
			want := readFile(t, name)
			cfg := GPUConfig{Device: f.device(t, 0), Size: int64(len(want)), ChunkSize: 1 << 20, Buffers: 2}
			dst, err := NewGPUDestination(path, cfg, f.driver(t))
			require.NoError(t, err)
			defer func() { require.NoError(t, dst.Close()) }()
			load := func() {
				src, err := OpenFile(name, DirectAuto)
				require.NoError(t, err)
				defer src.Close()
				_, err = Load(context.Background(), []Job{{Source: src, Length: -1, Dest: dst}}, Options{ChunkSize: 1 << 20, Workers: 2})
				require.NoError(t, err)
				require.NoError(t, dst.Settle())
			}
			load()
			require.Zero(t, f.Control.Counter("pinned"), "pinned buffers freed")
			require.Zero(t, f.Control.Counter("handles"), "cuFile handles deregistered")
			require.Equal(t, sha256hex(want), sha256hex(readBackAll(t, dst)))
			require.NotZero(t, dst.DevicePtr())
			load() // everything comes back for a second load
			require.Equal(t, sha256hex(want), sha256hex(readBackAll(t, dst)))
			require.NoError(t, dst.Settle(), "settling twice is harmless")
		})
	}
}
