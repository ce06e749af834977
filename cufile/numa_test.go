package cufile_test

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/internal/fakecuda"
)

// Each device's PCI address comes from cudaDeviceGetPCIBusId and its NUMA
// node from sysfs beneath the root given.
func TestDeviceNUMANode(t *testing.T) {
	reset(t, "devices=4")
	rt := openRuntime(t)
	for d := range 4 {
		dev, err := rt.Device(d)
		require.NoError(t, err)
		bus, err := dev.PCIBusID()
		require.NoError(t, err)
		assert.Equal(t, fakecuda.PCIBusID(d), bus)
		node, err := dev.NUMANode(fake.Root)
		require.NoError(t, err)
		assert.Equal(t, fakecuda.NUMANode(d), node)
	}
	dev, err := rt.Device(0)
	require.NoError(t, err)
	_, err = dev.NUMANode(t.TempDir())
	require.ErrorContains(t, err, "GPU 0's NUMA node")
}

// Pinned memory of a device placed on a NUMA node prefers that node: the
// kernel reports the mapping's policy as MPOL_PREFERRED with the node.
func TestAllocPinnedOnHostNode(t *testing.T) {
	reset(t)
	dev, err := openRuntime(t).Device(0)
	require.NoError(t, err)
	require.NoError(t, cufile.CheckHostNode(0), "node 0 exists on every Linux machine")
	b, err := dev.OnHostNode(0).AllocPinned(1 << 20)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Free()) }()
	var mode int32
	var mask uint64
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)), uintptr(unsafe.Pointer(&mask)), 64,
		uintptr(unsafe.Pointer(&b.Bytes()[0])), 2 /* MPOL_F_ADDR */, 0)
	require.Zero(t, e, "get_mempolicy: %v", e)
	assert.EqualValues(t, 1, mode, "MPOL_PREFERRED")
	assert.EqualValues(t, 1, mask, "node 0")
	assert.Equal(t, 0, dev.OnHostNode(0).HostNode())
	assert.Equal(t, -1, dev.HostNode())
}

// A node without memory is refused, with the kernel's reason.
func TestCheckHostNodeRefusesAMissingNode(t *testing.T) {
	for _, node := range []int{1, 63} {
		if _, err := os.Stat(fmt.Sprintf("/sys/devices/system/node/node%d", node)); err == nil {
			continue // this machine has it
		}
		require.ErrorContains(t, cufile.CheckHostNode(node), fmt.Sprintf("NUMA node %d: ", node))
	}
}
