package loader

import (
	"context"
	"errors"
	"sync"

	"github.com/gdsload/gdsload/cufile"
)

// GPUConfig describes the GPU memory a GPU destination lands bytes in.
type GPUConfig struct {
	// Device is the GPU. Required.
	Device *cufile.Device
	// Size is the number of bytes of device memory to allocate; it is
	// checked against the device's free memory first.
	Size int64
	// ChunkSize is the size of each pinned buffer, the largest chunk the
	// destination takes: at least the load's chunk size
	// (EffectiveChunkSize). Default DefaultChunkSize.
	ChunkSize int64
	// Buffers is the number of pinned buffers (default twice
	// DefaultWorkers, so every worker can read while its previous chunk
	// is copied). At least 2.
	Buffers int
}

func (c GPUConfig) withDefaults() GPUConfig {
	if c.ChunkSize <= 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.Buffers <= 0 {
		c.Buffers = 2 * DefaultWorkers
	}
	return c
}

// GPUBounce is a Destination in GPU memory reached through the bounce
// path: chunks are read into pinned host buffers and copied to the device
// asynchronously on a stream, overlapping reads with copies. It implements
// Destination, Sized and ReadBacker. It is reused across loads (the device
// memory and pinned buffers stay allocated) until Close. After a failed
// copy it refuses further spans: CUDA errors leave the device unusable.
type GPUBounce struct {
	gpuView
	cfg   GPUConfig
	route Route // RouteBounce, or RouteRDMA when made for remote sources that write device memory

	mu   sync.Mutex
	ring *pinnedRing // nil after Settle, until the next Span
}

// Route is RouteBounce, or RouteRDMA for a destination that
// NewGPUDestination made for the rdma route: sources that write device
// memory themselves (DeviceReaderSource) land there directly, the others
// through the pinned buffers.
func (b *GPUBounce) Route() Route {
	if b.route == "" {
		return RouteBounce
	}
	return b.route
}

// NewGPUBounceDestination allocates cfg.Size bytes on cfg.Device and the
// pinned buffers. When the memory does not fit, the error matches
// cufile.ErrOutOfMemory and names the bytes needed and free.
func NewGPUBounceDestination(cfg GPUConfig) (*GPUBounce, error) {
	cfg = cfg.withDefaults()
	mem, err := allocGPU(cfg.Device, cfg.Size, 0)
	if err != nil {
		return nil, err
	}
	ring, err := newPinnedRing(mem, cfg.Buffers, cfg.ChunkSize)
	if err != nil {
		return nil, errors.Join(err, mem.free())
	}
	return &GPUBounce{gpuView: gpuView{mem}, cfg: cfg, ring: ring}, nil
}

// pinned returns the ring, making it again after Settle.
func (g *GPUBounce) pinned() (*pinnedRing, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ring == nil {
		r, err := newPinnedRing(g.mem, g.cfg.Buffers, g.cfg.ChunkSize)
		if err != nil {
			return nil, err
		}
		g.ring = r
	}
	return g.ring, nil
}

// Span waits for a free pinned buffer for destination bytes [off, off+n);
// its Commit queues the copy to the device.
func (g *GPUBounce) Span(ctx context.Context, off, n int64) (Span, error) {
	r, err := g.pinned()
	if err != nil {
		return Span{}, err
	}
	return r.span(ctx, off, n)
}

// Flush waits until every committed span is in device memory.
func (g *GPUBounce) Flush(ctx context.Context) error {
	g.mu.Lock()
	r := g.ring
	g.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.flush(ctx)
}

// Settle waits for the copies in flight and frees the pinned buffers,
// keeping the device memory (GPUDestination.Settle).
func (g *GPUBounce) Settle() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ring == nil {
		return nil
	}
	err := g.ring.close()
	g.ring = nil
	return err
}

// ReadBack flushes, then copies device bytes [off, off+len(p)) into p.
func (g *GPUBounce) ReadBack(ctx context.Context, off int64, p []byte) error {
	if err := g.Flush(ctx); err != nil {
		return err
	}
	return g.mem.readBack(ctx, off, p)
}

// Close waits for copies in flight and frees the pinned buffers and the
// device memory.
func (g *GPUBounce) Close() error {
	return errors.Join(g.Settle(), g.mem.free())
}
