package loader

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/cufile"
)

// deviceWritingSource stands in for an rdmafs file over verbs: it puts the
// bytes into device memory itself (here with a synchronous copy, where the
// server would RDMA-write).
type deviceWritingSource struct {
	*File
	dev   *cufile.Device
	calls atomic.Int64
}

func (s *deviceWritingSource) ReadAtDevice(_ context.Context, ptr uintptr, n, off int64) (int, error) {
	s.calls.Add(1)
	buf := make([]byte, n)
	k, err := s.File.ReadAt(buf, off)
	if k > 0 {
		if cerr := s.dev.CopyToDevice(cufile.DevicePtr(ptr), buf[:k]); cerr != nil {
			return 0, cerr
		}
	}
	return k, err
}

// On the rdma path the source writes into the GPU destination's memory at
// the right addresses, with no pinned buffer in between; a source that
// cannot is bounced, and the result says so.
func TestLoadRDMAPathIntoGPU(t *testing.T) {
	f := withFakeGPU(t)
	name := writeRandom(t, t.TempDir(), 3<<20+999, 21)
	want := readFile(t, name)
	file, err := OpenFile(name, DirectAuto)
	require.NoError(t, err)
	defer file.Close()
	dev := f.device(t, 0)
	dst, err := NewGPUDestination(RouteRDMA, GPUConfig{Device: dev, Size: int64(len(want)) + 4096, ChunkSize: 1 << 20, Buffers: 2}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()

	src := &deviceWritingSource{File: file, dev: dev}
	before := f.Counter("async_bytes")
	res, err := Load(context.Background(), []Job{{Source: src, Length: -1, Dest: dst, DestOffset: 4096}},
		Options{Workers: 3, ChunkSize: 1 << 20, Checksum: ChecksumSHA256})
	require.NoError(t, err)
	require.Equal(t, RouteRDMA, dst.Route(), "the destination reports the route it was made for")
	require.Equal(t, RouteRDMA, res.Files[0].Route)
	require.Equal(t, RouteRDMA, res.Route)
	require.Equal(t, sha256hex(want), res.Files[0].SHA256)
	require.EqualValues(t, 4, src.calls.Load(), "one device write per chunk")
	require.Equal(t, before, f.Counter("async_bytes"), "no pinned-buffer copies")

	// A plain source on the rdma path goes through the pinned buffers.
	res, err = Load(context.Background(), []Job{WholeFile(file, dst)}, Options{ChunkSize: 1 << 20, Checksum: ChecksumSHA256})
	require.NoError(t, err)
	require.Equal(t, RouteBounce, res.Files[0].Route)
	require.Equal(t, RouteBounce, res.Route, "no byte took the rdma route")
	require.Contains(t, res.Files[0].Reason, "bounced")
	require.Equal(t, sha256hex(want), res.Files[0].SHA256)
}
