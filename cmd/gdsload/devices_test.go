package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gdsload/gdsload/devices"
)

// writeSys creates a file of a fake sysfs tree.
func writeSys(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content+"\n"), 0o644))
}

func TestDevicesFromSysfs(t *testing.T) {
	root := t.TempDir()
	writeSys(t, root, "class/nvme/nvme0/model", "Samsung SSD 990 PRO 2TB        ")
	writeSys(t, root, "class/nvme/nvme0/transport", "pcie")
	writeSys(t, root, "class/nvme/nvme0/address", "0000:41:00.0")
	writeSys(t, root, "class/nvme/nvme0/device/numa_node", "1")
	writeSys(t, root, "class/nvme/nvme1/model", "fabric drive")
	writeSys(t, root, "class/nvme/nvme1/transport", "rdma")
	writeSys(t, root, "class/infiniband/mlx5_0/device/numa_node", "0")
	writeSys(t, root, "class/infiniband/mlx5_0/fw_ver", "28.39.1002")
	writeSys(t, root, "class/infiniband/mlx5_0/device/net/ib0/ifindex", "3")
	writeSys(t, root, "class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE")
	writeSys(t, root, "class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand")
	writeSys(t, root, "class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)")

	r := collectDevices(devicesOptions{sysRoot: root, noNVML: true})
	require.Equal(t, []devices.NVMe{
		{Name: "nvme0", Model: "Samsung SSD 990 PRO 2TB", Transport: "pcie", Address: "0000:41:00.0", NUMANode: 1},
		{Name: "nvme1", Model: "fabric drive", Transport: "rdma", NUMANode: -1},
	}, r.NVMe)
	require.Equal(t, []devices.RDMA{{Name: "mlx5_0", Firmware: "28.39.1002", NUMANode: 0, NetDevs: []string{"ib0"},
		Ports: []devices.RDMAPort{{Port: 1, State: "4: ACTIVE", LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)"}}}}, r.RDMA)

	var out bytes.Buffer
	require.NoError(t, printDevices(&out, r))
	require.Contains(t, out.String(), "Samsung SSD 990 PRO 2TB")
	require.Contains(t, out.String(), "NUMA 1")
	require.Contains(t, out.String(), "mlx5_0")
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
