package devices

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeSys creates a file of a fake sysfs tree.
func writeSys(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content+"\n"), 0o644))
}

// NVMe drives and RDMA devices are read from sysfs: model names trimmed, a
// drive's NUMA node from its device (-1 where sysfs has none, as for a
// fabric-attached drive), an RDMA device's network interfaces and ports.
func TestCollectFromSysfs(t *testing.T) {
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

	r := Collect(Options{SysRoot: root, NoNVML: true})
	require.Equal(t, []NVMe{
		{Name: "nvme0", Model: "Samsung SSD 990 PRO 2TB", Transport: "pcie", Address: "0000:41:00.0", NUMANode: 1},
		{Name: "nvme1", Model: "fabric drive", Transport: "rdma", NUMANode: -1},
	}, r.NVMe)
	require.Equal(t, []RDMA{{Name: "mlx5_0", Firmware: "28.39.1002", NUMANode: 0, NetDevs: []string{"ib0"},
		Ports: []RDMAPort{{Port: 1, State: "4: ACTIVE", LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)"}}}}, r.RDMA)
}
