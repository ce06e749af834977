package rdmafs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fakeDeviceMemory stands for cufile.RDMAMemory. DmaBufFd hands out the
// write end of a fresh pipe, so a test can tell whether the client closed
// it; the offset is ptr - base, as if the whole allocation at base were
// exported.
type fakeDeviceMemory struct {
	base                      uintptr
	dmaErr, syncErr, flushErr error
	// onFlush runs at each flush, to check what must hold by then.
	onFlush func()

	mu                      sync.Mutex
	exports, syncs, flushes int
	fds                     []fakeDmaBuf
}

type fakeDmaBuf struct{ r, w int }

func (m *fakeDeviceMemory) DmaBufFd(ptr uintptr, n int64) (int, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.exports++
	if m.dmaErr != nil {
		return -1, 0, m.dmaErr
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return -1, 0, err
	}
	m.fds = append(m.fds, fakeDmaBuf{r: p[0], w: p[1]})
	return p[1], uint64(ptr - m.base), nil
}

func (m *fakeDeviceMemory) SyncMemops(ptr uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncs++
	return m.syncErr
}

func (m *fakeDeviceMemory) FlushRDMAWrites() error {
	if m.onFlush != nil {
		m.onFlush()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushes++
	return m.flushErr
}

func (m *fakeDeviceMemory) counts() (exports, syncs, flushes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exports, m.syncs, m.flushes
}

// checkDmaBufsClosed fails the test unless every dma-buf handed out was
// closed: reading the pipe then gives end of file instead of EAGAIN.
func (m *fakeDeviceMemory) checkDmaBufsClosed(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.fds {
		n, err := unix.Read(f.r, make([]byte, 1))
		unix.Close(f.r)
		assert.Zero(t, n, "dma-buf fd %d still open after the read (read on its pipe: %d, %v)", f.w, n, err)
		assert.NoError(t, err, "dma-buf fd %d still open after the read (read on its pipe: %d, %v)", f.w, n, err)
	}
	m.fds = nil
}

// fakeRegistrar records the registrations a deviceTarget asks for.
type fakeRegistrar struct {
	dmaErr, peerErr error
	calls           []string
	key             uint32
}

func (r *fakeRegistrar) Register(p []byte) (Region, error) {
	return Region{}, errors.New("host registration not expected")
}
func (r *fakeRegistrar) Deregister(Region) error { return nil }

func (r *fakeRegistrar) RegisterDmaBuf(fd int, offset uint64, n int64, iova uint64) (Region, error) {
	r.calls = append(r.calls, fmt.Sprintf("dmabuf off=%d n=%d iova=0x%x", offset, n, iova))
	if r.dmaErr != nil {
		return Region{}, r.dmaErr
	}
	r.key++
	return Region{Addr: iova, Len: uint64(n), Key: r.key}, nil
}

func (r *fakeRegistrar) RegisterDevicePeer(ptr uintptr, n int64) (Region, error) {
	r.calls = append(r.calls, fmt.Sprintf("peer 0x%x n=%d", ptr, n))
	if r.peerErr != nil {
		return Region{}, r.peerErr
	}
	r.key++
	return Region{Addr: uint64(ptr), Len: uint64(n), Key: r.key}, nil
}

// The registration choice: dma-buf when the GPU driver exports the memory
// and the RDMA device takes it; else SYNC_MEMOPS and nvidia-peermem; else
// an error naming both causes. The first piece decides for the read; later
// pieces register the same way without asking the GPU driver again.
func TestDeviceRegistrationChoice(t *testing.T) {
	const base, ptr, n = 0x7e0000000000, 0x7e0000001000, 8192
	tests := []struct {
		name              string
		dm                *fakeDeviceMemory
		reg               *fakeRegistrar
		method            string
		calls             []string
		exports, syncs    int
		reasonHas, errHas []string
		holdsDmaBuf       bool
	}{
		{
			name: "dma-buf works", method: RegDmaBuf, exports: 1,
			calls:       []string{"dmabuf off=4096 n=4096 iova=0x7e0000001000", "dmabuf off=8192 n=4096 iova=0x7e0000002000"},
			reasonHas:   []string{"dma-buf"},
			holdsDmaBuf: true,
		},
		{
			name:   "export refused: peermem",
			dm:     &fakeDeviceMemory{dmaErr: errors.New("CUDA_ERROR_NOT_SUPPORTED")},
			method: RegPeermem, exports: 1, syncs: 1,
			calls:     []string{"peer 0x7e0000001000 n=4096", "peer 0x7e0000002000 n=4096"},
			reasonHas: []string{"dma-buf unavailable", "export failed: CUDA_ERROR_NOT_SUPPORTED"},
		},
		{
			name:   "RDMA device refuses the dma-buf: peermem",
			reg:    &fakeRegistrar{dmaErr: errors.New("ibv_reg_dmabuf_mr: operation not supported")},
			method: RegPeermem, exports: 1, syncs: 1,
			calls:     []string{"dmabuf off=4096 n=4096 iova=0x7e0000001000", "peer 0x7e0000001000 n=4096", "peer 0x7e0000002000 n=4096"},
			reasonHas: []string{"refused it: ibv_reg_dmabuf_mr: operation not supported"},
		},
		{
			name:    "both refused",
			dm:      &fakeDeviceMemory{dmaErr: errors.New("CUDA_ERROR_NOT_SUPPORTED"), syncErr: errors.New("CUDA_ERROR_INVALID_VALUE")},
			exports: 1, syncs: 1,
			reasonHas: []string{"dma-buf: export failed: CUDA_ERROR_NOT_SUPPORTED", "nvidia-peermem: SYNC_MEMOPS failed: CUDA_ERROR_INVALID_VALUE"},
			errHas:    []string{"GPU memory [0x7e0000001000, +8192) could not be registered", "load nvidia-peermem", "bounce path"},
		},
		{
			name:    "dma-buf refused, peermem module missing",
			dm:      &fakeDeviceMemory{dmaErr: errors.New("CUDA_ERROR_NOT_SUPPORTED")},
			reg:     &fakeRegistrar{peerErr: errors.New("ibv_reg_mr: bad address (is the nvidia-peermem module loaded?)")},
			exports: 1, syncs: 1,
			calls:     []string{"peer 0x7e0000001000 n=4096"},
			reasonHas: []string{"dma-buf: export failed", "nvidia-peermem: ibv_reg_mr: bad address"},
			errHas:    []string{"nvidia-peermem module loaded"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dm == nil {
				tc.dm = &fakeDeviceMemory{}
			}
			if tc.reg == nil {
				tc.reg = &fakeRegistrar{}
			}
			tc.dm.base = base
			tg := newDeviceTarget(tc.dm, ptr, n)
			_, err1 := tg.register(tc.reg, 0, 4096)
			_, err2 := tg.register(tc.reg, 4096, 8192)
			reg, chosen := tg.outcome()
			assert.True(t, chosen, "method %q (chosen %v), want %q", reg.Method, chosen, tc.method)
			assert.Equal(t, tc.method, reg.Method, "method %q (chosen %v), want %q", reg.Method, chosen, tc.method)
			for _, s := range tc.reasonHas {
				assert.Contains(t, reg.Reason, s, "reason %q does not say %q", reg.Reason, s)
			}
			assert.False(t, tc.method != "" && (err1 != nil || err2 != nil), "registrations failed: %v, %v", err1, err2)
			if tc.method == "" {
				for _, err := range []error{err1, err2} {
					if !assert.ErrorIs(t, err, ErrNoGPUDirect, "err %v, want ErrNoGPUDirect", err) {
						continue
					}
					for _, s := range append(tc.errHas, tc.reasonHas...) {
						assert.ErrorContains(t, err, s, "error %q does not say %q", err, s)
					}
				}
			}
			assert.Equal(t, strings.Join(tc.calls, "; "), strings.Join(tc.reg.calls, "; "), "registrations:\n got %q\nwant %q", tc.reg.calls, tc.calls)
			exports, syncs, _ := tc.dm.counts()
			assert.Equal(t, tc.exports, exports, "GPU driver asked for %d exports and %d SYNC_MEMOPS, want %d and %d", exports, syncs, tc.exports, tc.syncs)
			assert.Equal(t, tc.syncs, syncs, "GPU driver asked for %d exports and %d SYNC_MEMOPS, want %d and %d", exports, syncs, tc.exports, tc.syncs)
			holds := tg.fd >= 0
			assert.Equal(t, tc.holdsDmaBuf, holds, "dma-buf held open by the target: %v, want %v", holds, tc.holdsDmaBuf)
			tg.close()
			tc.dm.checkDmaBufsClosed(t)
		})
	}
}

// A piece that fails to register after the choice was made reports the
// method and wraps ErrNoGPUDirect (the caller falls back to bounce).
func TestDeviceRegistrationLaterPieceFails(t *testing.T) {
	dm := &fakeDeviceMemory{base: 0x1000}
	tg := newDeviceTarget(dm, 0x1000, 8192)
	defer dm.checkDmaBufsClosed(t)
	defer tg.close()
	_, err := tg.register(&fakeRegistrar{}, 0, 4096)
	require.NoError(t, err)
	_, err = tg.register(&fakeRegistrar{dmaErr: errors.New("ENOMEM")}, 4096, 8192)
	require.ErrorIs(t, err, ErrNoGPUDirect, "err %v, want ErrNoGPUDirect naming dma-buf and ENOMEM", err)
	require.ErrorContains(t, err, "with dma-buf: ENOMEM", "err %v, want ErrNoGPUDirect naming dma-buf and ENOMEM", err)
}
