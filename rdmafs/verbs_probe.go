package rdmafs

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/rdmafs/internal/ibv"
)

// RDMAReport says what the verbs transport would find on this machine:
// rdma-core, the devices and their ports, and the locked-memory limit that
// bounds how much memory can be registered.
type RDMAReport struct {
	// Library is the libibverbs file loaded ("" when it did not load),
	// Version rdma-core's release as its file name records it, ABI the
	// highest IBVERBS_1.x symbol version it defines.
	Library string `json:"library,omitempty"`
	Version string `json:"rdma_core_version,omitempty"`
	ABI     string `json:"verbs_abi,omitempty"`
	// DmaBuf reports ibv_reg_dmabuf_mr (rdma-core 34+), the preferred way
	// to register GPU memory.
	DmaBuf  bool         `json:"dma_buf"`
	Devices []RDMADevice `json:"devices"`
	Memlock MemlockLimit `json:"memlock"`
	// Usable reports whether the verbs transport would start; Reason says
	// why not, or what it would use.
	Usable bool   `json:"usable"`
	Reason string `json:"reason"`
}

// RDMADevice is one RDMA device as libibverbs sees it.
type RDMADevice struct {
	Name     string     `json:"name"`
	Firmware string     `json:"firmware,omitempty"`
	Ports    []RDMAPort `json:"ports"`
	Error    string     `json:"error,omitempty"`
}

// RDMAPort is one port and its link.
type RDMAPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	LinkLayer string `json:"link_layer,omitempty"`
	ActiveMTU int    `json:"active_mtu,omitempty"`
	Error     string `json:"error,omitempty"`
}

// MemlockLimit is RLIMIT_MEMLOCK: every registered buffer counts against it.
type MemlockLimit struct {
	Soft      string `json:"soft"` // bytes, or "unlimited"
	Hard      string `json:"hard"`
	SoftBytes uint64 `json:"soft_bytes"`
}

// ProbeRDMA loads rdma-core as the verbs transport does and reports what it
// finds. It never fails: what is missing is in the report.
func ProbeRDMA() RDMAReport {
	r := RDMAReport{Devices: []RDMADevice{}, Memlock: memlockLimit()}
	l, err := ibv.Load()
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	r.Library, r.Version, r.DmaBuf = l.VerbsPath, l.Version(), l.HasDmaBuf()
	if l.ABI > 0 {
		r.ABI = fmt.Sprintf("IBVERBS_1.%d", l.ABI)
	}
	devs, err := l.Devices()
	for _, d := range devs {
		rd := RDMADevice{Name: d.Name, Firmware: d.Firmware, Error: d.Error, Ports: []RDMAPort{}}
		for _, p := range d.Ports {
			rd.Ports = append(rd.Ports, RDMAPort{Port: p.Port, State: p.State, LinkLayer: p.LinkLayer, ActiveMTU: p.ActiveMTU, Error: p.Error})
		}
		r.Devices = append(r.Devices, rd)
	}
	switch {
	case errors.Is(err, ibv.ErrNoDevices):
		r.Reason = err.Error()
	case err != nil:
		r.Reason = "listing devices: " + err.Error()
	case len(devs) == 0:
		r.Reason = "no RDMA device (for a test without a NIC: rdma link add rxe0 type rxe netdev IFACE)"
	default:
		active := 0
		for _, d := range r.Devices {
			for _, p := range d.Ports {
				if p.State == "ACTIVE" {
					active++
				}
			}
		}
		r.Usable = true
		r.Reason = fmt.Sprintf("%d device(s), %d active port(s)", len(r.Devices), active)
		if active == 0 {
			r.Reason += ": no link is up, connections will fail"
		}
	}
	return r
}

func memlockLimit() MemlockLimit {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return MemlockLimit{Soft: "unknown: " + err.Error(), Hard: "unknown"}
	}
	f := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return fmt.Sprintf("%d", v)
	}
	return MemlockLimit{Soft: f(rl.Cur), Hard: f(rl.Max), SoftBytes: rl.Cur}
}

// Lines renders the report for people, one fact a line.
func (r RDMAReport) Lines() []string {
	var out []string
	if r.Library == "" {
		out = append(out, "rdma-core: not loaded: "+r.Reason)
	} else {
		dmaBuf := "no (rdma-core 34+ needed; GPU memory through nvidia-peermem only)"
		if r.DmaBuf {
			dmaBuf = "yes"
		}
		out = append(out, fmt.Sprintf("rdma-core %s (%s, %s); dma-buf registration: %s", orUnknown(r.Version), r.Library, r.ABI, dmaBuf))
	}
	for _, d := range r.Devices {
		if d.Error != "" {
			out = append(out, fmt.Sprintf("%s: %s", d.Name, d.Error))
			continue
		}
		var ports []string
		for _, p := range d.Ports {
			if p.Error != "" {
				ports = append(ports, fmt.Sprintf("port %d: %s", p.Port, p.Error))
				continue
			}
			s := fmt.Sprintf("port %d %s %s", p.Port, p.LinkLayer, p.State)
			if p.ActiveMTU > 0 {
				s += fmt.Sprintf(" MTU %d", p.ActiveMTU)
			}
			ports = append(ports, s)
		}
		out = append(out, fmt.Sprintf("%s (firmware %s): %s", d.Name, d.Firmware, strings.Join(ports, "; ")))
	}
	out = append(out, fmt.Sprintf("locked memory: soft %s, hard %s (registered buffers count against it)", r.Memlock.Soft, r.Memlock.Hard))
	verdict := "verbs transport: not usable: "
	if r.Usable {
		verdict = "verbs transport: usable: "
	}
	return append(out, verdict+r.Reason)
}
