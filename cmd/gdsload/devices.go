package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"
)

// devicesReport is what `gdsload devices` finds: GPUs (through NVML), NVMe
// drives and RDMA NICs (through sysfs), each with its NUMA node, so users
// can see which drive, NIC and GPU share a socket.
type devicesReport struct {
	GPUs          []gpuInfo  `json:"gpus"`
	NVMLError     string     `json:"nvml_error,omitempty"`
	DriverVersion string     `json:"driver_version,omitempty"`
	NVMe          []nvmeInfo `json:"nvme"`
	RDMA          []rdmaInfo `json:"rdma"`
}

type gpuInfo struct {
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

type nvmeInfo struct {
	Name      string `json:"name"`
	Model     string `json:"model"`
	Transport string `json:"transport,omitempty"`
	Address   string `json:"address,omitempty"`
	NUMANode  int    `json:"numa_node"`
}

type rdmaInfo struct {
	Name     string     `json:"name"`
	NUMANode int        `json:"numa_node"`
	NetDevs  []string   `json:"netdevs,omitempty"`
	Ports    []rdmaPort `json:"ports"`
}

type rdmaPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	LinkLayer string `json:"link_layer"`
	Rate      string `json:"rate"`
}

type devicesOptions struct {
	asJSON  bool
	sysRoot string // "/sys"; tests point it at a fake tree
	noNVML  bool   // tests: skip NVML
}

func newDevicesCmd() *cobra.Command {
	o := devicesOptions{sysRoot: "/sys"}
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List GPUs, NVMe drives and RDMA NICs with their NUMA nodes",
		Long: `devices lists the GPUs (through NVML: name, UUID, memory, BAR1, PCIe link,
NUMA node), NVMe drives and RDMA NICs (through sysfs) of this machine, so that
you can pair drives, NICs and GPUs on one NUMA node. Where NVML is missing it
says so and still lists the rest.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := collectDevices(o)
			if o.asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			return printDevices(cmd.OutOrStdout(), r)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON on stdout")
	return cmd
}

func collectDevices(o devicesOptions) devicesReport {
	r := devicesReport{GPUs: []gpuInfo{}}
	if o.noNVML {
		r.NVMLError = "NVML not queried"
	} else {
		r.GPUs, r.DriverVersion, r.NVMLError = nvmlGPUs(o.sysRoot)
	}
	r.NVMe = sysfsNVMe(o.sysRoot)
	r.RDMA = sysfsRDMA(o.sysRoot)
	return r
}

// nvmlGPUs lists GPUs through NVML. NVML missing or failing is reported,
// never fatal; a panic inside the bindings is turned into that report too.
func nvmlGPUs(sysRoot string) (gpus []gpuInfo, driver, nvmlErr string) {
	gpus = []gpuInfo{}
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
		g := gpuInfo{Index: i, NUMANode: -1}
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

func sysfsNVMe(sysRoot string) []nvmeInfo {
	out := []nvmeInfo{}
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "class", "nvme", "nvme*"))
	sort.Strings(dirs)
	for _, d := range dirs {
		n := nvmeInfo{
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

func sysfsRDMA(sysRoot string) []rdmaInfo {
	out := []rdmaInfo{}
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "class", "infiniband", "*"))
	sort.Strings(dirs)
	for _, d := range dirs {
		r := rdmaInfo{Name: filepath.Base(d), NUMANode: numaNode(filepath.Join(d, "device")), Ports: []rdmaPort{}}
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
			r.Ports = append(r.Ports, rdmaPort{
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

func numaString(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func printDevices(w io.Writer, r devicesReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GPUs")
	if r.NVMLError != "" {
		fmt.Fprintf(tw, "  (%s)\n", r.NVMLError)
	} else if len(r.GPUs) == 0 {
		fmt.Fprintln(tw, "  none")
	} else {
		fmt.Fprintf(tw, "  driver %s\n", r.DriverVersion)
		fmt.Fprintln(tw, "  #\tname\tmemory free/total\tBAR1 free/total\tPCIe\tNUMA\tUUID")
		for _, g := range r.GPUs {
			if g.Error != "" {
				fmt.Fprintf(tw, "  %d\t%s\n", g.Index, g.Error)
				continue
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s / %s\t%s / %s\tgen%d x%d\t%s\t%s\n", g.Index, g.Name,
				humanBytes(g.MemoryFree), humanBytes(g.MemoryTotal), humanBytes(g.BAR1Free), humanBytes(g.BAR1Total),
				g.PCIeGen, g.PCIeWidth, numaString(g.NUMANode), g.UUID)
		}
	}
	fmt.Fprintln(tw, "NVMe drives")
	if len(r.NVMe) == 0 {
		fmt.Fprintln(tw, "  none")
	}
	for _, n := range r.NVMe {
		fmt.Fprintf(tw, "  %s\t%s\t%s %s\tNUMA %s\n", n.Name, n.Model, n.Transport, n.Address, numaString(n.NUMANode))
	}
	fmt.Fprintln(tw, "RDMA devices")
	if len(r.RDMA) == 0 {
		fmt.Fprintln(tw, "  none")
	}
	for _, d := range r.RDMA {
		var ports []string
		for _, p := range d.Ports {
			ports = append(ports, fmt.Sprintf("port %d %s %s %s", p.Port, p.LinkLayer, p.State, p.Rate))
		}
		fmt.Fprintf(tw, "  %s\t%s\tNUMA %s\t%s\n", d.Name, strings.Join(d.NetDevs, ","), numaString(d.NUMANode), strings.Join(ports, "; "))
	}
	return tw.Flush()
}

// humanBytes prints a byte count in GiB or MiB.
func humanBytes(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
