// Package devices lists what a machine offers gdsload: GPUs (through
// NVML, loaded at run time by go-nvml), NVMe drives and RDMA NICs (through
// sysfs), each with its NUMA node, so drives, NICs and GPUs can be paired
// on one socket. Nothing here fails: what cannot be read is reported.
package devices

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Report is what a machine has: GPUs (through NVML), NVMe drives and
// RDMA NICs (through sysfs), each with its NUMA node, so users can see
// which drive, NIC and GPU share a socket. Its JSON form is what
// `gdsload devices --json` prints.
type Report struct {
	GPUs          []GPU  `json:"gpus"`
	NVMLError     string `json:"nvml_error,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	NVMe          []NVMe `json:"nvme"`
	RDMA          []RDMA `json:"rdma"`
}

// GPU is one GPU as NVML describes it; NUMANode is -1 when unknown or
// on a single-node machine, Error what NVML refused.
type GPU struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	UUID        string `json:"uuid"`
	BusID       string `json:"bus_id,omitempty"`
	MemoryTotal uint64 `json:"memory_total"`
	MemoryFree  uint64 `json:"memory_free"`
	BAR1Total   uint64 `json:"bar1_total"`
	BAR1Free    uint64 `json:"bar1_free"`
	PCIeGen     int    `json:"pcie_gen"`
	PCIeWidth   int    `json:"pcie_width"`
	NUMANode    int    `json:"numa_node"` // -1: unknown or single node
	Error       string `json:"error,omitempty"`
}

// NVMe is one NVMe controller as sysfs describes it.
type NVMe struct {
	Name      string `json:"name"`
	Model     string `json:"model"`
	Transport string `json:"transport,omitempty"`
	Address   string `json:"address,omitempty"`
	NUMANode  int    `json:"numa_node"`
}

// RDMA is one RDMA device (an InfiniBand or RoCE NIC) as sysfs
// describes it. It is the one list of RDMA devices; rdmafs.ProbeRDMA says
// only whether its verbs transport would start on them.
type RDMA struct {
	Name     string     `json:"name"`
	Firmware string     `json:"firmware,omitempty"`
	NUMANode int        `json:"numa_node"`
	NetDevs  []string   `json:"netdevs,omitempty"`
	Ports    []RDMAPort `json:"ports"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	LinkLayer string `json:"link_layer"`
	Rate      string `json:"rate"`
}

// Options say where to look.
type Options struct {
	// SysRoot is sysfs ("/sys" when empty); tests point it at a fake tree.
	SysRoot string
	// NoNVML skips NVML (its report then says so).
	NoNVML bool
}

// Collect lists the machine's GPUs, NVMe drives and RDMA devices.
func Collect(o Options) Report {
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	r := Report{GPUs: []GPU{}}
	if o.NoNVML {
		r.NVMLError = "NVML not queried"
	} else {
		r.GPUs, r.DriverVersion, r.NVMLError = GPUs(o.SysRoot)
	}
	r.NVMe = NVMeDrives(o.SysRoot)
	r.RDMA = RDMADevices(o.SysRoot)
	return r
}

// GPUs lists GPUs through NVML, with the driver version. NVML missing or
// failing is reported in nvmlErr, never fatal; a panic inside the bindings
// is turned into that report too. sysRoot ("/sys") gives NUMA nodes NVML
// does not know.
func GPUs(sysRoot string) (gpus []GPU, driver, nvmlErr string) {
	gpus = []GPU{}
	defer func() {
		if p := recover(); p != nil {
			nvmlErr = fmt.Sprintf("NVML failed: %v", p)
		}
	}()
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return gpus, "", "libnvidia-ml.so.1 not found: no NVIDIA driver installed"
		}
		return gpus, "", fmt.Sprintf("nvmlInit failed: %v", ret)
	}
	defer lib.Shutdown()
	driver, _ = lib.SystemGetDriverVersion()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return gpus, driver, fmt.Sprintf("nvmlDeviceGetCount failed: %v", ret)
	}
	for i := range n {
		g := GPU{Index: i, NUMANode: -1}
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			g.Error = fmt.Sprintf("nvmlDeviceGetHandleByIndex: %v", ret)
			gpus = append(gpus, g)
			continue
		}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryTotal, g.MemoryFree = m.Total, m.Free
		}
		if b, ret := d.GetBAR1MemoryInfo(); ret == nvml.SUCCESS {
			g.BAR1Total, g.BAR1Free = b.Bar1Total, b.Bar1Free
		}
		g.PCIeGen, _ = d.GetCurrPcieLinkGeneration()
		g.PCIeWidth, _ = d.GetCurrPcieLinkWidth()
		if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
			g.BusID = cString(pci.BusId[:])
		}
		if node, ret := d.GetNumaNodeId(); ret == nvml.SUCCESS {
			g.NUMANode = node
		} else if g.BusID != "" {
			g.NUMANode = numaNode(filepath.Join(sysRoot, "bus", "pci", "devices", pciSysfsName(g.BusID)))
		}
		gpus = append(gpus, g)
	}
	return gpus, driver, ""
}

func cString(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}

// pciSysfsName turns NVML's "00000000:3B:00.0" into sysfs's "0000:3b:00.0".
func pciSysfsName(busID string) string {
	s := strings.ToLower(busID)
	if i := strings.Index(s, ":"); i > 4 {
		s = s[i-4:]
	}
	return s
}

// readSys returns a sysfs attribute's trimmed text, or "".
func readSys(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// numaNode reads dir/numa_node; -1 when absent (as the kernel reports for
// single-node machines).
func numaNode(dir string) int {
	n, err := strconv.Atoi(readSys(filepath.Join(dir, "numa_node")))
	if err != nil {
		return -1
	}
	return n
}

// NVMeDrives lists the NVMe controllers under sysRoot ("/sys"), sorted
// by name.
func NVMeDrives(sysRoot string) []NVMe {
	out := []NVMe{}
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "class", "nvme", "nvme*"))
	sort.Strings(dirs)
	for _, d := range dirs {
		n := NVMe{
			Name:      filepath.Base(d),
			Model:     readSys(filepath.Join(d, "model")),
			Transport: readSys(filepath.Join(d, "transport")),
			Address:   readSys(filepath.Join(d, "address")),
			NUMANode:  numaNode(filepath.Join(d, "device")),
		}
		if n.NUMANode < 0 {
			n.NUMANode = numaNode(d)
		}
		out = append(out, n)
	}
	return out
}

// RDMADevices lists the RDMA devices under sysRoot ("/sys"), sorted by
// name, with their ports and network interfaces.
func RDMADevices(sysRoot string) []RDMA {
	out := []RDMA{}
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "class", "infiniband", "*"))
	sort.Strings(dirs)
	for _, d := range dirs {
		r := RDMA{Name: filepath.Base(d), Firmware: readSys(filepath.Join(d, "fw_ver")), NUMANode: numaNode(filepath.Join(d, "device")), Ports: []RDMAPort{}}
		nets, _ := filepath.Glob(filepath.Join(d, "device", "net", "*"))
		for _, n := range nets {
			r.NetDevs = append(r.NetDevs, filepath.Base(n))
		}
		sort.Strings(r.NetDevs)
		ports, _ := filepath.Glob(filepath.Join(d, "ports", "*"))
		for _, p := range ports {
			num, err := strconv.Atoi(filepath.Base(p))
			if err != nil {
				continue
			}
			r.Ports = append(r.Ports, RDMAPort{
				Port:      num,
				State:     readSys(filepath.Join(p, "state")),
				LinkLayer: readSys(filepath.Join(p, "link_layer")),
				Rate:      readSys(filepath.Join(p, "rate")),
			})
		}
		sort.Slice(r.Ports, func(i, j int) bool { return r.Ports[i].Port < r.Ports[j].Port })
		out = append(out, r)
	}
	return out
}
