package rdmafs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gdsload/gdsload/rdmafs/internal/ibv"
)

// RDMAReport says whether the verbs transport would start on this
// machine: rdma-core and the devices it opens. Which RDMA devices and ports
// the machine has is package devices' (RDMADevices, from sysfs), and the
// locked-memory limit that bounds registration is loader.MemlockLimit.
type RDMAReport struct {
	// Library is the libibverbs file loaded ("" when it did not load),
	// Version rdma-core's release as its file name records it, ABI the
	// highest IBVERBS_1.x symbol version it defines.
	Library string `json:"library,omitempty"`
	Version string `json:"rdma_core_version,omitempty"`
	ABI     string `json:"verbs_abi,omitempty"`
	// DmaBuf reports ibv_reg_dmabuf_mr (rdma-core 34+), the preferred way
	// to register GPU memory.
	DmaBuf bool `json:"dma_buf"`
	// Usable reports whether the verbs transport would start; Reason says
	// why not, or what it would use (devices and active ports, and each
	// device libibverbs lists but cannot open).
	Usable bool   `json:"usable"`
	Reason string `json:"reason"`
}

// ProbeRDMA loads rdma-core as the verbs transport does and reports what it
// finds. It never fails: what is missing is in the report.
func ProbeRDMA() RDMAReport {
	var r RDMAReport
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
	switch {
	case errors.Is(err, ibv.ErrNoDevices):
		r.Reason = err.Error()
	case err != nil:
		r.Reason = "listing devices: " + err.Error()
	case len(devs) == 0:
		r.Reason = "no RDMA device (for a test without a NIC: rdma link add rxe0 type rxe netdev IFACE)"
	default:
		active := 0
		var unopened []string
		for _, d := range devs {
			if d.Error != "" {
				unopened = append(unopened, d.Name+": "+d.Error)
			}
			for _, p := range d.Ports {
				if p.State == "ACTIVE" {
					active++
				}
			}
		}
		r.Usable = true
		r.Reason = fmt.Sprintf("%d device(s), %d active port(s)", len(devs), active)
		if len(unopened) > 0 {
			r.Reason += " (" + strings.Join(unopened, "; ") + ")"
		}
		if active == 0 {
			r.Reason += ": no link is up, connections will fail"
		}
	}
	return r
}

// Lines renders the report for people, one fact a line: rdma-core, then
// the verdict.
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
	verdict := "verbs transport: not usable: "
	if r.Usable {
		verdict = "verbs transport: usable: "
	}
	return append(out, verdict+r.Reason)
}
