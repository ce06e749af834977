package loader

import (
	"errors"

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
	*lazyRing // Span, Flush and ReadBack; freed by Settle, made again by the next Span
	cfg       GPUConfig
	route     Route // RouteBounce, or RouteRDMA when made for remote sources that write device memory
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
	g := &GPUBounce{gpuView: gpuView{mem}, lazyRing: &lazyRing{gpu: mem, buffers: cfg.Buffers, chunk: cfg.ChunkSize}, cfg: cfg}
	if _, err := g.get(); err != nil {
		return nil, errors.Join(err, mem.free())
	}
	return g, nil
}

// Settle waits for the copies in flight and frees the pinned buffers,
// keeping the device memory (GPUDestination.Settle).
func (g *GPUBounce) Settle() error { return g.settle() }

// Close waits for copies in flight and frees the pinned buffers and the
// device memory.
func (g *GPUBounce) Close() error {
	return errors.Join(g.Settle(), g.mem.free())
}
