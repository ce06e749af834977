package rdmafs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// ProbeRDMA reports what this machine has, whatever that is, and never
// claims a usable transport that Verbs would refuse.
func TestProbeRDMA(t *testing.T) {
	r := ProbeRDMA()
	for _, l := range r.Lines() {
		t.Log(l)
	}
	assert.NotEmpty(t, r.Reason, "report without a reason: %+v", r)
	_, err := Verbs()
	assert.Equal(t, (err == nil), r.Usable, "report says usable=%v, Verbs() says %v", r.Usable, err)
	lines := strings.Join(r.Lines(), "\n")
	for _, want := range []string{"verbs transport"} {
		assert.Contains(t, lines, want, "report lines lack %q:\n%s", want, lines)
	}
	assert.False(t, r.Library != "" && !strings.Contains(lines, "rdma-core"), "rdma-core loaded but not named:\n%s", lines)
}

func TestRDMAReportLines(t *testing.T) {
	r := RDMAReport{Library: "/usr/lib/libibverbs.so.1", Version: "50.0", ABI: "IBVERBS_1.14", DmaBuf: true,
		Usable: true, Reason: "2 device(s), 1 active port(s) (rxe0: ibv_open_device: permission denied)"}
	got := strings.Join(r.Lines(), "\n")
	for _, want := range []string{"rdma-core 50.0", "dma-buf registration: yes",
		"rxe0: ibv_open_device: permission denied", "verbs transport: usable"} {
		assert.Contains(t, got, want, "lines lack %q:\n%s", want, got)
	}
}
