package cufile

/*
#include "cudart.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// PCIBusID returns the device's PCI address as sysfs names it
// ("0000:3b:00.0"), from cudaDeviceGetPCIBusId.
func (d *Device) PCIBusID() (string, error) {
	buf := make([]byte, 64)
	var id string
	err := d.Do(func() error {
		code := C.gd_deviceGetPCIBusId(d.rt.f, (*C.char)(unsafePointer(&buf[0])), C.int(len(buf)), C.int(d.id))
		if code == -1 {
			return fmt.Errorf("cudaDeviceGetPCIBusId: %s lacks it", d.rt.lib.Path)
		}
		if err := d.rt.check(code, "cudaDeviceGetPCIBusId(GPU %d)", d.id); err != nil {
			return err
		}
		id = C.GoString((*C.char)(unsafePointer(&buf[0])))
		return nil
	})
	return strings.ToLower(id), err
}

// NUMANode returns the NUMA node of the device's PCI slot as sysfs
// (beneath root, "" for /) records it: -1 where the machine has one node
// or does not say. The error says what could not be read.
func (d *Device) NUMANode(root string) (int, error) {
	bus, err := d.PCIBusID()
	if err != nil {
		return -1, err
	}
	p := filepath.Join(root, "/sys/bus/pci/devices", bus, "numa_node")
	b, err := os.ReadFile(p)
	if err != nil {
		return -1, fmt.Errorf("GPU %d's NUMA node: %w", d.id, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1, fmt.Errorf("GPU %d's NUMA node: %s holds %q", d.id, p, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// OnHostNode returns the device with pinned host memory (AllocPinned)
// placed on NUMA node node where the kernel allows it; node < 0: no
// preference. Check the node first with CheckHostNode: a node the kernel
// refuses is silently not applied.
func (d *Device) OnHostNode(node int) *Device {
	c := *d
	c.hostNode = max(node, -1)
	return &c
}

// HostNode is the NUMA node AllocPinned prefers, -1 for none.
func (d *Device) HostNode() int { return d.hostNode }

// CheckHostNode reports whether this process may place memory on NUMA
// node node: nil, or the kernel's refusal (a node without memory, or one
// outside the process's cpuset).
func CheckHostNode(node int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := preferHostNode(node); err != nil {
		return fmt.Errorf("NUMA node %d: %w", node, err)
	}
	resetHostNode()
	return nil
}
