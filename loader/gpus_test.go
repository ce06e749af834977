package loader

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/internal/fakecuda"
)

func TestParseTargetSeveralGPUs(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Target
		multi bool
		err   string
	}{
		{in: "gpu:all", want: Target{Kind: TargetGPU, AllDevices: true}, multi: true},
		{in: "gpu:0,2,3", want: Target{Kind: TargetGPU, Device: 0, Devices: []int{0, 2, 3}}, multi: true},
		{in: "gpu:3,1", want: Target{Kind: TargetGPU, Device: 3, Devices: []int{3, 1}}, multi: true},
		{in: "gpu:2", want: Target{Kind: TargetGPU, Device: 2}},
		{in: "gpu:1,1", err: "GPU 1 named twice"},
		{in: "gpu:1,", err: "want host"},
		{in: "gpu:-1,2", err: "want host"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTarget(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.multi, got.Multi())
			assert.Equal(t, tc.in, got.String())
		})
	}
}

func TestOpenTargetRefusesSeveralGPUs(t *testing.T) {
	_, err := OpenTarget(Target{Kind: TargetGPU, Devices: []int{0, 1}})
	require.ErrorContains(t, err, "OpenGPUs")
}

func TestPlaceByBytesBalancesWithinOneItem(t *testing.T) {
	for _, tc := range []struct {
		sizes []int64
		bins  int
	}{
		{sizes: []int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, bins: 4},
		{sizes: []int64{100, 1, 1, 1, 1}, bins: 4},
		{sizes: []int64{5, 5, 5, 5, 5, 5, 5, 5}, bins: 4},
		{sizes: []int64{3, 1}, bins: 4},
		{sizes: []int64{1 << 30, 7 << 20, 900 << 20, 33, 512 << 20, 512 << 20}, bins: 3},
	} {
		t.Run(fmt.Sprint(tc.sizes), func(t *testing.T) {
			got := PlaceByBytes(tc.sizes, tc.bins)
			load := make([]int64, tc.bins)
			for i, b := range got {
				require.GreaterOrEqual(t, b, 0)
				require.Less(t, b, tc.bins)
				load[b] += tc.sizes[i]
			}
			assert.LessOrEqual(t, slices.Max(load)-slices.Min(load), slices.Max(tc.sizes), "loads %v", load)
		})
	}
}

// Four GPUs loading at once: every file byte-exact on the GPU placement
// gave it, the GPUs balanced within one file's size, and all four
// busy at the same moment (the double holds each GPU's first copy until
// the others have started, or 20 s).
func TestGPUSetLoadsEveryGPUAtOnce(t *testing.T) {
	for _, route := range []Route{RouteBounce, RouteGDS} {
		t.Run(string(route), func(t *testing.T) {
			f := withFakeGPU(t, "devices=4", "wait_all_ms=20000")
			dir := t.TempDir()
			sizes := []int{5<<20 + 3, 4 << 20, 3<<20 + 4095, 3 << 20, 2 << 20, 2<<20 + 1, 1 << 20, 700 << 10, 4096, 17}
			var srcs []Source
			want := map[string]string{}
			for i, n := range sizes {
				name := writeRandom(t, dir, n, uint64(40+i))
				want[name] = sha256hex(readFile(t, name))
				src, err := OpenFile(name, DirectAuto)
				require.NoError(t, err)
				t.Cleanup(func() { src.Close() })
				srcs = append(srcs, src)
			}
			set, err := OpenGPUs(Target{Kind: TargetGPU, AllDevices: true}, WithCuFileConfig(f.Config()), WithRoute(route),
				WithWorkers(2), WithChunkSize(1<<20))
			require.NoError(t, err)
			defer func() { require.NoError(t, set.Close()) }()
			require.Len(t, set.GPUs(), 4)

			res, err := set.Load(context.Background(), srcs, Options{Checksum: ChecksumSHA256})
			require.NoError(t, err)
			require.Len(t, res.GPUs, 4)
			seen := map[string]bool{}
			var loads []int64
			var total int64
			for i, g := range res.GPUs {
				require.Equal(t, i, g.Device)
				assert.Equal(t, route, g.Route)
				assert.Equal(t, fakecuda.NUMANode(i), g.NUMANode, "node from the bus id's sysfs numa_node")
				assert.Contains(t, g.Staging, fmt.Sprintf("NUMA node %d", fakecuda.NUMANode(i)))
				require.NotEmpty(t, g.Files, "gpu:%d got no file", i)
				for _, fr := range g.Files {
					assert.Equal(t, want[fr.Name], fr.SHA256, "%s on gpu:%d", fr.Name, i)
					seen[fr.Name] = true
				}
				assert.Equal(t, g.Bytes, f.Counter(fmt.Sprintf("landed:%d", i)), "bytes the double saw land on gpu:%d", i)
				loads = append(loads, g.Bytes)
				total += g.Bytes
			}
			assert.Len(t, seen, len(sizes), "every file loaded once")
			for i, fr := range res.InSourceOrder() {
				assert.Equal(t, srcs[i].Name(), fr.Name)
			}
			assert.Equal(t, total, res.Bytes)
			assert.LessOrEqual(t, slices.Max(loads)-slices.Min(loads), int64(slices.Max(sizes)), "per-GPU bytes %v", loads)
			assert.EqualValues(t, 4, f.Counter("max_busy_devices"), "all four GPUs copying at once")
		})
	}
}

// A GPU that fails in the middle of a load fails the load with an error
// naming it, and Close gives back every allocation, pinned buffer, stream
// and handle of every GPU (fakecuda.Use checks the rest at the end).
func TestGPUSetFailingGPU(t *testing.T) {
	for _, route := range []Route{RouteBounce, RouteGDS} {
		t.Run(string(route), func(t *testing.T) {
			f := withFakeGPU(t, "devices=4", "fault=fail_device:2:1048576")
			dir := t.TempDir()
			var srcs []Source
			for i := range 8 {
				name := writeRandom(t, dir, 3<<20, uint64(70+i))
				src, err := OpenFile(name, DirectAuto)
				require.NoError(t, err)
				t.Cleanup(func() { src.Close() })
				srcs = append(srcs, src)
			}
			set, err := OpenGPUs(Target{Kind: TargetGPU, Devices: []int{0, 1, 2, 3}}, WithCuFileConfig(f.Config()), WithRoute(route),
				WithWorkers(2), WithChunkSize(1<<20))
			require.NoError(t, err)
			_, err = set.Load(context.Background(), srcs, Options{})
			require.Error(t, err)
			assert.Regexp(t, `^gpu:2: `, err.Error())
			assert.Positive(t, f.Counter("allocs"), "the landings hold their memory until Close")
			if err := set.Close(); err != nil {
				assert.Contains(t, err.Error(), "gpu:2", "Close reports the failed GPU's copy error only")
			}
			for _, c := range []string{"allocs", "pinned", "streams", "events", "handles", "bufreg"} {
				assert.Zero(t, f.Counter(c), c)
			}
		})
	}
}
