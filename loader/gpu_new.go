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
	Sized
	ReadBacker
	DeviceDestination
	Close() error
}

// NewGPUDestination allocates cfg's device memory for a load on path: gds
// reads with cuFile through drv (NewGPUDirectDestination); bounce, and
// rdma (whose sources that cannot write device memory themselves fall
// back to it), go through pinned buffers (NewGPUBounceDestination).
func NewGPUDestination(path Path, cfg GPUConfig, drv *cufile.Driver) (GPUDestination, error) {
	switch path {
	case PathGDS:
		if drv == nil {
			return nil, errors.New("gds destination: no cuFile driver")
		}
		d, err := NewGPUDirectDestination(GPUDirectConfig{GPUConfig: cfg, Driver: drv})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return d, nil
	case PathBounce, PathRDMA:
		d, err := NewGPUBounceDestination(cfg)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("GPU destination for path %q: want gds, bounce or rdma", path)
}
