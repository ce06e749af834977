package loader

import (
	"errors"
	"fmt"

	"github.com/gdsload/gdsload/cufile"
)

// GPUDestination is device memory a load lands in, closed by the caller:
// a *GPUDirect or a *GPUBounce.
type GPUDestination interface {
	Destination
	Router
	Sized
	ReadBacker
	DeviceDestination
	// DevicePtr is the device address of destination offset 0.
	DevicePtr() cufile.DevicePtr
	// Settle frees what only transfers need (the pinned buffers, cuFile's
	// file handles) once the loads into the destination are over, keeping
	// the device memory and its bytes, so memory that outlives the load,
	// such as tensors handed to a framework, holds nothing else. A later
	// transfer sets them up again. The files it read may be closed after
	// Settle. It must not run while a transfer does.
	Settle() error
	Close() error
}

// GPUAllocator gives each call its own device allocation of size bytes
// (at least one) on cfg.Device, landed on route (NewGPUDestination; gds
// needs drv); cfg.Size is set per call. The caller closes each. It is the
// one way device memory is allocated per file: Landing.Allocator makes
// these from a resolved target (and frees what is left at Close), and a
// caller whose allocations outlive the Landing that chose the route (the
// Python library's tensors) calls it directly.
func GPUAllocator(route Route, cfg GPUConfig, drv *cufile.Driver) func(size int64) (GPUDestination, error) {
	return func(size int64) (GPUDestination, error) {
		c := cfg
		c.Size = max(size, 1)
		return NewGPUDestination(route, c, drv)
	}
}

// NewGPUDestination allocates cfg's device memory for a load on route:
// gds reads with cuFile through drv (NewGPUDirectDestination); bounce, and
// rdma (whose sources that cannot write device memory themselves fall
// back to it), go through pinned buffers (NewGPUBounceDestination). The
// destination reports route as its own.
func NewGPUDestination(route Route, cfg GPUConfig, drv *cufile.Driver) (GPUDestination, error) {
	switch route {
	case RouteGDS:
		if drv == nil {
			return nil, errors.New("gds destination: no cuFile driver")
		}
		d, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: cfg, Driver: drv})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return d, nil
	case RouteBounce, RouteRDMA:
		d, err := NewGPUBounceDestination(cfg)
		if err != nil {
			return nil, err
		}
		d.route = route
		return d, nil
	}
	return nil, fmt.Errorf("GPU destination for route %q: want gds, bounce or rdma", route)
}
