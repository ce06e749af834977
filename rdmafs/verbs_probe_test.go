package rdmafs

import (
	"strings"
	"testing"
)

// ProbeRDMA reports what this machine has, whatever that is, and never
// claims a usable transport that Verbs would refuse.
func TestProbeRDMA(t *testing.T) {
	r := ProbeRDMA()
	for _, l := range r.Lines() {
		t.Log(l)
	}
	if r.Memlock.Soft == "" || r.Reason == "" {
		t.Errorf("report without memlock or reason: %+v", r)
	}
	_, err := Verbs()
	if r.Usable != (err == nil) {
		t.Errorf("report says usable=%v, Verbs() says %v", r.Usable, err)
	}
	lines := strings.Join(r.Lines(), "\n")
	for _, want := range []string{"locked memory", "verbs transport"} {
		if !strings.Contains(lines, want) {
			t.Errorf("report lines lack %q:\n%s", want, lines)
		}
	}
	if r.Library != "" && !strings.Contains(lines, "rdma-core") {
		t.Errorf("rdma-core loaded but not named:\n%s", lines)
	}
}

func TestRDMAReportLines(t *testing.T) {
	r := RDMAReport{Library: "/usr/lib/libibverbs.so.1", Version: "50.0", ABI: "IBVERBS_1.14", DmaBuf: true,
		Devices: []RDMADevice{{Name: "mlx5_0", Firmware: "28.39.1002", Ports: []RDMAPort{{Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand", ActiveMTU: 4096}}},
			{Name: "rxe0", Error: "ibv_open_device: permission denied"}},
		Memlock: MemlockLimit{Soft: "unlimited", Hard: "unlimited"}, Usable: true, Reason: "2 device(s), 1 active port(s)"}
	got := strings.Join(r.Lines(), "\n")
	for _, want := range []string{"rdma-core 50.0", "dma-buf registration: yes", "mlx5_0 (firmware 28.39.1002): port 1 InfiniBand ACTIVE MTU 4096",
		"rxe0: ibv_open_device: permission denied", "soft unlimited", "verbs transport: usable"} {
		if !strings.Contains(got, want) {
			t.Errorf("lines lack %q:\n%s", want, got)
		}
	}
}
