package rdmafs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGPU is GPU memory simulated by a host buffer at a made-up device
// address: rdmafs only passes device addresses around, never dereferences
// them, so any address works.
type fakeGPU struct {
	base uintptr
	mem  []byte
	// refuseDmaBuf makes the RDMA side refuse dma-buf registrations.
	refuseDmaBuf bool

	mu                         sync.Mutex
	live, dmaBufRegs, peerRegs int
}

func (g *fakeGPU) slice(addr uint64, n int64) ([]byte, error) {
	lo := addr - uint64(g.base)
	if addr < uint64(g.base) || lo+uint64(n) > uint64(len(g.mem)) {
		return nil, fmt.Errorf("[0x%x, +%d) is not GPU memory", addr, n)
	}
	return g.mem[lo : lo+uint64(n)], nil
}

func (g *fakeGPU) liveRegions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live
}

// gpuLoopback is the loopback transport with its device resolving
// fakeGPU memory, and connections that count how they register it.
type gpuLoopback struct {
	*loopback
	gpu *fakeGPU
}

func newGPULoopback(gpu *fakeGPU) gpuLoopback {
	lb := newLoopback()
	d := lb.fab.devs[0]
	d.gpu, d.dmaBuf = gpu, !gpu.refuseDmaBuf
	return gpuLoopback{loopback: lb, gpu: gpu}
}

func (gpuLoopback) registersDeviceMemory() {}

func (g gpuLoopback) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := g.loopback.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &gpuLoopConn{verbsClientConn: c.(*verbsClientConn), gpu: g.gpu}, nil
}

type gpuLoopConn struct {
	*verbsClientConn
	gpu *fakeGPU
}

var _ deviceRegistrar = (*gpuLoopConn)(nil)

func (c *gpuLoopConn) RegisterDmaBuf(fd int, offset uint64, n int64, iova uint64) (Region, error) {
	// The exported buffer starts at the allocation (see fakeDeviceMemory):
	// offset and iova must name the same GPU byte.
	if iova-offset != uint64(c.gpu.base) {
		return Region{}, fmt.Errorf("dma-buf offset %d does not match iova 0x%x", offset, iova)
	}
	return c.count(c.verbsClientConn.RegisterDmaBuf(fd, offset, n, iova))(&c.gpu.dmaBufRegs)
}

func (c *gpuLoopConn) RegisterDevicePeer(ptr uintptr, n int64) (Region, error) {
	return c.count(c.verbsClientConn.RegisterDevicePeer(ptr, n))(&c.gpu.peerRegs)
}

func (c *gpuLoopConn) count(r Region, err error) func(*int) (Region, error) {
	return func(n *int) (Region, error) {
		if err == nil {
			c.gpu.mu.Lock()
			c.gpu.live++
			*n++
			c.gpu.mu.Unlock()
		}
		return r, err
	}
}

func (c *gpuLoopConn) Deregister(r Region) error {
	err := c.verbsClientConn.Deregister(r)
	if err == nil {
		c.gpu.mu.Lock()
		c.gpu.live--
		c.gpu.mu.Unlock()
	}
	return err
}

// ReadAtDevice lands the file's bytes in GPU memory through registered
// regions, in pieces over several connections; every region is gone and
// the dma-buf closed before the one flush, which comes after the last
// write; the registration method is reported. Reading past the end gives
// the bytes there are and io.EOF, flushed too.
func TestReadAtDeviceOverRegions(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dmaErr       error
		refuseDmaBuf bool
		method       string
		reason       string
	}{
		{name: "dma-buf", method: RegDmaBuf, reason: "exported the memory as a dma-buf"},
		{name: "export refused", dmaErr: errors.New("CUDA_ERROR_NOT_SUPPORTED"), method: RegPeermem,
			reason: "export failed: CUDA_ERROR_NOT_SUPPORTED"},
		{name: "NIC refuses dma-buf", refuseDmaBuf: true, method: RegPeermem,
			reason: "refused it: ibv_reg_dmabuf_mr of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 1<<20 + 12345
			gpu := &fakeGPU{base: 0x7e0000000000, mem: make([]byte, 2<<20), refuseDmaBuf: tc.refuseDmaBuf}
			tr := newGPULoopback(gpu)
			ts := startServer(t, serverConfig{}, tr)
			data := writeFile(t, ts.root, "weights.bin", size, 11)
			dm := &fakeDeviceMemory{base: gpu.base, dmaErr: tc.dmaErr}
			dm.onFlush = func() {
				n := gpu.liveRegions()
				assert.Zero(t, n, "flush with %d regions still registered", n)
			}
			cl := dialTest(t, ts, tr, WithDeviceMemory(dm), WithChunkSize(64<<10), WithConnections(3))
			assert.Zero(t, cl.DeviceRegistration(), "registration before any device read")
			f, err := cl.Open(context.Background(), "weights.bin")
			require.NoError(t, err)

			const dst, off, n = 4096 + 17, 1000, 700000
			got, err := f.ReadAtDevice(context.Background(), gpu.base+dst, n, off)
			require.NoError(t, err, "ReadAtDevice = %d, %v; want %d, nil", got, err, n)
			require.EqualValues(t, n, got, "ReadAtDevice = %d, %v; want %d, nil", got, err, n)
			assert.True(t, bytes.Equal(gpu.mem[dst:dst+n], data[off:off+n]), "GPU memory differs from the file")
			assert.Zero(t, gpu.mem[dst-1], "bytes outside the destination were written")
			assert.Zero(t, gpu.mem[dst+n], "bytes outside the destination were written")
			exports, syncs, flushes := dm.counts()
			pieces := (n + 64<<10 - 1) / (64 << 10)
			assert.Equal(t, 1, exports, "%d dma-buf exports and %d flushes for one read, want 1 and 1", exports, flushes)
			assert.Equal(t, 1, flushes, "%d dma-buf exports and %d flushes for one read, want 1 and 1", exports, flushes)
			wantDma, wantPeer, wantSyncs := pieces, 0, 0
			if tc.method == RegPeermem {
				wantDma, wantPeer, wantSyncs = 0, pieces, 1
			}
			assert.Equal(t, wantDma, gpu.dmaBufRegs, "%d dma-buf and %d peermem registrations, %d SYNC_MEMOPS; want %d, %d, %d", gpu.dmaBufRegs, gpu.peerRegs, syncs, wantDma, wantPeer, wantSyncs)
			assert.Equal(t, wantPeer, gpu.peerRegs, "%d dma-buf and %d peermem registrations, %d SYNC_MEMOPS; want %d, %d, %d", gpu.dmaBufRegs, gpu.peerRegs, syncs, wantDma, wantPeer, wantSyncs)
			assert.Equal(t, wantSyncs, syncs, "%d dma-buf and %d peermem registrations, %d SYNC_MEMOPS; want %d, %d, %d", gpu.dmaBufRegs, gpu.peerRegs, syncs, wantDma, wantPeer, wantSyncs)
			r := cl.DeviceRegistration()
			assert.Equal(t, tc.method, r.Method, "DeviceRegistration = %+v, want method %q with a reason saying %q", r, tc.method, tc.reason)
			assert.Contains(t, r.Reason, tc.reason, "DeviceRegistration = %+v, want method %q with a reason saying %q", r, tc.method, tc.reason)
			dm.checkDmaBufsClosed(t)

			// Past the end: the tail, io.EOF, and still a flush.
			clear(gpu.mem)
			got, err = f.ReadAtDevice(context.Background(), gpu.base, 100000, size-5000)
			require.Equal(t, 5000, got, "read across the end = %d, %v; want 5000, io.EOF", got, err)
			require.Equal(t, io.EOF, err, "read across the end = %d, %v; want 5000, io.EOF", got, err)
			assert.True(t, bytes.Equal(gpu.mem[:5000], data[size-5000:]), "tail bytes wrong in GPU memory")
			assert.Zero(t, gpu.mem[5000], "tail bytes wrong in GPU memory")
			_, _, flushes = dm.counts()
			assert.Equal(t, 2, flushes, "%d flushes after two reads, want 2", flushes)
			assert.EqualValues(t, 0, gpu.liveRegions(), "%d regions still registered after the reads", gpu.liveRegions())
			dm.checkDmaBufsClosed(t)
		})
	}
}

// When neither method registers the memory, nothing is read, nothing is
// flushed, and the error and the diagnostics name both causes.
func TestReadAtDeviceNoRegistration(t *testing.T) {
	gpu := &fakeGPU{base: 0x7e0000000000, mem: make([]byte, 1<<20)}
	tr := newGPULoopback(gpu)
	ts := startServer(t, serverConfig{}, tr)
	writeFile(t, ts.root, "a.bin", 300000, 3)
	dm := &fakeDeviceMemory{base: gpu.base, dmaErr: errors.New("CUDA_ERROR_NOT_SUPPORTED"), syncErr: errors.New("CUDA_ERROR_INVALID_VALUE")}
	cl := dialTest(t, ts, tr, WithDeviceMemory(dm), WithChunkSize(64<<10))
	f, err := cl.Open(context.Background(), "a.bin")
	require.NoError(t, err)
	n, err := f.ReadAtDevice(context.Background(), gpu.base, 300000, 0)
	require.EqualValues(t, 0, n, "ReadAtDevice = %d, %v; want 0 and ErrNoGPUDirect", n, err)
	require.ErrorIs(t, err, ErrNoGPUDirect, "ReadAtDevice = %d, %v; want 0 and ErrNoGPUDirect", n, err)
	for _, s := range []string{"a.bin", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_INVALID_VALUE", "bounce path"} {
		assert.ErrorContains(t, err, s, "error %q does not say %q", err, s)
	}
	r := cl.DeviceRegistration()
	assert.Empty(t, r.Method, "DeviceRegistration = %+v, want no method and both causes", r)
	assert.Contains(t, r.Reason, "dma-buf: export failed", "DeviceRegistration = %+v, want no method and both causes", r)
	assert.Contains(t, r.Reason, "nvidia-peermem: SYNC_MEMOPS failed", "DeviceRegistration = %+v, want no method and both causes", r)
	exports, syncs, flushes := dm.counts()
	assert.Equal(t, 1, exports, "%d exports, %d SYNC_MEMOPS, %d flushes; want 1, 1, 0", exports, syncs, flushes)
	assert.Equal(t, 1, syncs, "%d exports, %d SYNC_MEMOPS, %d flushes; want 1, 1, 0", exports, syncs, flushes)
	assert.Zero(t, flushes, "%d exports, %d SYNC_MEMOPS, %d flushes; want 1, 1, 0", exports, syncs, flushes)
}

// A failed flush fails the read: the data may not be visible to the GPU.
func TestReadAtDeviceFlushFails(t *testing.T) {
	gpu := &fakeGPU{base: 0x7e0000000000, mem: make([]byte, 1<<20)}
	tr := newGPULoopback(gpu)
	ts := startServer(t, serverConfig{}, tr)
	writeFile(t, ts.root, "a.bin", 8192, 3)
	dm := &fakeDeviceMemory{base: gpu.base, flushErr: errors.New("cudaErrorIllegalAddress")}
	cl := dialTest(t, ts, tr, WithDeviceMemory(dm))
	f, err := cl.Open(context.Background(), "a.bin")
	require.NoError(t, err)
	n, err := f.ReadAtDevice(context.Background(), gpu.base, 8192, 0)
	require.Zero(t, n, "ReadAtDevice with a failing flush = %d, %v", n, err)
	require.ErrorIs(t, err, ErrNoGPUDirect, "ReadAtDevice with a failing flush = %d, %v", n, err)
	require.ErrorContains(t, err, "cudaErrorIllegalAddress", "ReadAtDevice with a failing flush = %d, %v", n, err)
	require.ErrorContains(t, err, "may not be visible", "ReadAtDevice with a failing flush = %d, %v", n, err)
	dm.checkDmaBufsClosed(t)
}

// Stream and plain loopback transports refuse GPU destinations up front,
// pointing at the bounce path, without touching the GPU; so does a client
// without DeviceMemory, and bad ranges are refused.
func TestReadAtDeviceRefusals(t *testing.T) {
	for _, tt := range transports() {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.tr()
			ts := startServer(t, serverConfig{}, tr)
			writeFile(t, ts.root, "a.bin", 4096, 1)
			dm := &fakeDeviceMemory{}
			cl := dialTest(t, ts, tr, WithDeviceMemory(dm))
			f, err := cl.Open(context.Background(), "a.bin")
			require.NoError(t, err)
			n, err := f.ReadAtDevice(context.Background(), 0x7e0000000000, 4096, 0)
			want := "GPU destinations need the verbs transport and this client uses " + tt.name
			require.Zero(t, n, "ReadAtDevice over %s = %d, %v; want ErrNoGPUDirect saying %q and naming the bounce path", tt.name, n, err, want)
			require.ErrorIs(t, err, ErrNoGPUDirect, "ReadAtDevice over %s = %d, %v; want ErrNoGPUDirect saying %q and naming the bounce path", tt.name, n, err, want)
			require.ErrorContains(t, err, want, "ReadAtDevice over %s = %d, %v; want ErrNoGPUDirect saying %q and naming the bounce path", tt.name, n, err, want)
			require.ErrorContains(t, err, "pinned host memory", "ReadAtDevice over %s = %d, %v; want ErrNoGPUDirect saying %q and naming the bounce path", tt.name, n, err, want)
			require.ErrorContains(t, err, "bounce path", "ReadAtDevice over %s = %d, %v; want ErrNoGPUDirect saying %q and naming the bounce path", tt.name, n, err, want)
			exports, syncs, flushes := dm.counts()
			assert.Zero(t, exports+syncs+flushes, "the GPU was asked %d times", exports+syncs+flushes)
		})
	}
	t.Run("no DeviceMemory", func(t *testing.T) {
		tr := newGPULoopback(&fakeGPU{})
		ts := startServer(t, serverConfig{}, tr)
		writeFile(t, ts.root, "a.bin", 4096, 1)
		f, err := dialTest(t, ts, tr).Open(context.Background(), "a.bin")
		require.NoError(t, err)
		_, err = f.ReadAtDevice(context.Background(), 0x7e0000000000, 4096, 0)
		require.ErrorIs(t, err, ErrNoGPUDirect, "ReadAtDevice without DeviceMemory: %v", err)
		require.ErrorContains(t, err, "WithDeviceMemory", "ReadAtDevice without DeviceMemory: %v", err)
		for _, c := range []struct {
			ptr    uintptr
			n, off int64
		}{{0x1000, 10, -1}, {0x1000, -1, 0}, {^uintptr(0) - 10, 100, 0}} {
			_, err := f.ReadAtDevice(context.Background(), c.ptr, c.n, c.off)
			assert.ErrorIs(t, err, ErrInvalid, "ReadAtDevice(0x%x, %d, %d): %v, want ErrInvalid", c.ptr, c.n, c.off, err)
		}
		n, err := f.ReadAtDevice(context.Background(), 0x1000, 0, 0)
		assert.Zero(t, n, "empty read = %d, %v", n, err)
		assert.NoError(t, err, "empty read = %d, %v", n, err)
	})
}

// A file handle given its own DeviceMemory reads into GPU memory from a
// client dialled without one, and says whether its transport can at all.
func TestFileWithDeviceMemory(t *testing.T) {
	gpu := &fakeGPU{base: 0x7e0000000000, mem: make([]byte, 1<<20)}
	tr := newGPULoopback(gpu)
	ts := startServer(t, serverConfig{}, tr)
	data := writeFile(t, ts.root, "w.bin", 300000, 5)
	f, err := dialTest(t, ts, tr, WithChunkSize(64<<10)).Open(context.Background(), "w.bin")
	require.NoError(t, err)
	require.True(t, f.DeviceReads(), "a region transport that registers GPU memory reports no device reads")
	_, err = f.ReadAtDevice(context.Background(), gpu.base, 1000, 0)
	require.ErrorIs(t, err, ErrNoGPUDirect, "without DeviceMemory")
	dm := &fakeDeviceMemory{base: gpu.base}
	g := f.WithDeviceMemory(dm)
	n, err := g.ReadAtDevice(context.Background(), gpu.base, int64(len(data)), 0)
	require.NoError(t, err, "ReadAtDevice through the file's DeviceMemory")
	require.Equal(t, len(data), n, "ReadAtDevice through the file's DeviceMemory = %d, %v", n, err)
	assert.True(t, bytes.Equal(gpu.mem[:len(data)], data), "GPU memory differs from the file")
	_, _, flushes := dm.counts()
	assert.Equal(t, 1, flushes, "%d flushes through the file's DeviceMemory, want 1", flushes)
	assert.Equal(t, f.Name(), g.Name(), "the bound handle names another file")
	assert.Equal(t, f.Size(), g.Size(), "the bound handle names another file")

	tcp := startServer(t, serverConfig{}, TCP())
	writeFile(t, tcp.root, "w.bin", 10, 1)
	h, err := dialTest(t, tcp, TCP()).Open(context.Background(), "w.bin")
	require.NoError(t, err)
	assert.False(t, h.DeviceReads(), "a tcp client reports device reads")
}
