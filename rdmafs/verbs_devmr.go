package rdmafs

import (
	"errors"
	"fmt"
	"syscall"
)

// GPU memory as an RDMA destination. Registrations ask for relaxed
// ordering, which lets the device reorder its PCIe writes into GPU memory
// (a large gain on many platforms); the completion and the flush that
// follow a read still order them for the GPU. Devices without it: the
// library drops the flag from address registrations (ibv_reg_mr_iova2),
// and a dma-buf registration refused with it is retried without.

const gpuAccess = accessLocalWrite | accessRemoteWrite | accessRelaxedOrdering

// RegisterDmaBuf registers n bytes at offset of dma-buf fd with the
// connection's protection domain; the server writes to them from iova.
func (c *verbsClientConn) RegisterDmaBuf(fd int, offset uint64, n int64, iova uint64) (Region, error) {
	if n <= 0 {
		return Region{}, fmt.Errorf("register %d bytes of GPU memory: the length must be positive", n)
	}
	return c.register(iova, uint64(n), nil, func(pd rdmaPD) (rdmaMR, error) {
		mr, err := pd.regDmaBuf(fd, offset, int(n), iova, gpuAccess)
		if errors.Is(err, syscall.EINVAL) {
			mr, err = pd.regDmaBuf(fd, offset, int(n), iova, gpuAccess&^accessRelaxedOrdering)
		}
		if err != nil {
			return nil, fmt.Errorf("ibv_reg_dmabuf_mr of %d bytes at dma-buf offset %d: %w "+
				"(needs rdma-core 34+, Linux 5.12+ and an RDMA driver with dma-buf support, such as mlx5)", n, offset, err)
		}
		return mr, nil
	})
}

// RegisterDevicePeer registers GPU memory [ptr, ptr+n) by its virtual
// address (nvidia-peermem).
func (c *verbsClientConn) RegisterDevicePeer(ptr uintptr, n int64) (Region, error) {
	if n <= 0 {
		return Region{}, fmt.Errorf("register %d bytes of GPU memory: the length must be positive", n)
	}
	return c.register(uint64(ptr), uint64(n), nil, func(pd rdmaPD) (rdmaMR, error) {
		mr, err := pd.regAddr(ptr, int(n), gpuAccess)
		if err != nil {
			return nil, fmt.Errorf("ibv_reg_mr of %d bytes of GPU memory at 0x%x: %w "+
				"(is the nvidia-peermem module loaded? modprobe nvidia-peermem)", n, ptr, err)
		}
		return mr, nil
	})
}
