package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/devices"
)

// The table lists each GPU, drive and RDMA device the report holds, with
// its NUMA node ("-" where unknown).
func TestPrintDevices(t *testing.T) {
	r := devices.Report{
		GPUs:          []devices.GPU{{Index: 0, Name: "NVIDIA H100", MemoryTotal: 80 << 30, MemoryFree: 79 << 30, PCIeGen: 5, PCIeWidth: 16, NUMANode: 1, UUID: "GPU-1234"}},
		DriverVersion: "550.54",
		NVMe: []devices.NVMe{
			{Name: "nvme0", Model: "Samsung SSD 990 PRO 2TB", Transport: "pcie", Address: "0000:41:00.0", NUMANode: 1},
			{Name: "nvme1", Model: "fabric drive", Transport: "rdma", NUMANode: -1},
		},
		RDMA: []devices.RDMA{{Name: "mlx5_0", NUMANode: 0, NetDevs: []string{"ib0"},
			Ports: []devices.RDMAPort{{Port: 1, State: "4: ACTIVE", LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)"}}}},
	}
	var out bytes.Buffer
	require.NoError(t, printDevices(&out, r))
	for _, want := range []string{
		"driver 550.54", "NVIDIA H100", "gen5 x16", "GPU-1234",
		"Samsung SSD 990 PRO 2TB", "pcie 0000:41:00.0", "NUMA 1", "fabric drive", "NUMA -",
		"mlx5_0", "ib0", "NUMA 0", "port 1 InfiniBand 4: ACTIVE 400 Gb/sec (4X NDR)",
	} {
		require.Contains(t, out.String(), want)
	}
}

// On this machine, whatever it has: the command never fails, and without
// NVML it says why and still lists drives and NICs.
func TestDevicesCommandJSON(t *testing.T) {
	cmd := newDevicesCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--json"})
	require.NoError(t, cmd.Execute())
	var r devices.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), out.String())
	require.NotNil(t, r.NVMe)
	require.NotNil(t, r.RDMA)
	if len(r.GPUs) == 0 {
		require.NotEmpty(t, r.NVMLError, "no GPU listed and no reason given")
	}
}
