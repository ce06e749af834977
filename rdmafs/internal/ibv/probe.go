package ibv

/*
#include "lib.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Device describes one RDMA device as libibverbs sees it.
type Device struct {
	Name     string `json:"name"`
	Firmware string `json:"firmware,omitempty"`
	Ports    []Port `json:"ports"`
	// Error says why the device could not be opened or queried.
	Error string `json:"error,omitempty"`
}

// Port is one port of a device.
type Port struct {
	Port      int    `json:"port"`
	State     string `json:"state"`      // DOWN, INIT, ARMED, ACTIVE, ...
	LinkLayer string `json:"link_layer"` // InfiniBand, Ethernet
	ActiveMTU int    `json:"active_mtu"` // bytes
	Error     string `json:"error,omitempty"`
}

// Active reports whether the port's link is up.
func (p Port) Active() bool { return p.State == "ACTIVE" }

var portStates = map[int]string{0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}

func linkLayer(v int) string {
	switch v {
	case C.GDV_LINK_LAYER_INFINIBAND:
		return "InfiniBand"
	case C.GDV_LINK_LAYER_ETHERNET:
		return "Ethernet"
	}
	// Older kernels leave it unspecified for InfiniBand ports.
	return "InfiniBand"
}

// ErrNoDevices: the kernel offers no RDMA devices at all.
var ErrNoDevices = errors.New("no RDMA devices")

// Devices lists the RDMA devices with their ports (ibv_get_device_list,
// ibv_query_device, ibv_query_port). An empty list and a nil error mean
// rdma-core works and the machine has no RDMA device; where the kernel has
// no RDMA support loaded the list is empty and the error wraps
// ErrNoDevices.
func (l *Lib) Devices() ([]Device, error) {
	var n C.int
	list, err := C.gdv_get_device_list(l.c, &n)
	if list == nil {
		err = errnoOr(err, syscall.ENOSYS)
		if errors.Is(err, syscall.ENOSYS) {
			return []Device{}, fmt.Errorf("ibv_get_device_list: %w: %w (the kernel's RDMA support, ib_uverbs, is not loaded)", ErrNoDevices, err)
		}
		return nil, fmt.Errorf("ibv_get_device_list: %w", err)
	}
	defer C.gdv_free_device_list(l.c, list)
	out := []Device{}
	for _, dev := range unsafe.Slice(list, int(n)) {
		d := Device{Name: C.GoString(C.gdv_get_device_name(l.c, dev)), Ports: []Port{}}
		ctx, err := C.gdv_open_device(l.c, dev)
		if ctx == nil {
			d.Error = fmt.Sprintf("ibv_open_device: %v", errnoOr(err, syscall.ENODEV))
			out = append(out, d)
			continue
		}
		var attr C.struct_gdv_device_attr
		if rc := C.gdv_query_device(l.c, ctx, &attr); rc != 0 {
			d.Error = fmt.Sprintf("ibv_query_device: %v", rcErr(rc))
		} else {
			d.Firmware = C.GoString(&attr.fw_ver[0])
			for p := 1; p <= int(attr.phys_port_cnt); p++ {
				var pa C.struct_gdv_port_attr
				port := Port{Port: p}
				if rc := C.gdv_query_port(l.c, ctx, C.uint8_t(p), &pa); rc != 0 {
					port.Error = fmt.Sprintf("ibv_query_port: %v", rcErr(rc))
				} else {
					port.State = portStates[int(pa.state)]
					if port.State == "" {
						port.State = fmt.Sprintf("state %d", int(pa.state))
					}
					port.LinkLayer = linkLayer(int(pa.link_layer))
					if pa.active_mtu >= 1 && pa.active_mtu <= 5 {
						port.ActiveMTU = 128 << int(pa.active_mtu)
					}
				}
				d.Ports = append(d.Ports, port)
			}
		}
		C.gdv_close_device(l.c, ctx)
		out = append(out, d)
	}
	return out, nil
}
