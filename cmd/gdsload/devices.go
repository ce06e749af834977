package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/devices"
	"github.com/gdsload/gdsload/internal/humanize"
)

type devicesOptions struct {
	asJSON bool
}

func newDevicesCmd() *cobra.Command {
	var o devicesOptions
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List GPUs, NVMe drives and RDMA NICs with their NUMA nodes",
		Long: `devices lists the GPUs (through NVML: name, UUID, memory, BAR1, PCIe link,
NUMA node), NVMe drives and RDMA NICs (through sysfs) of this machine, so that
you can pair drives, NICs and GPUs on one NUMA node. Where NVML is missing it
says so and still lists the rest.`,
		Args: noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := devices.Collect(devices.Options{})
			if o.asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			return printDevices(cmd.OutOrStdout(), r)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON on stdout")
	return cmd
}

func numaString(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func printDevices(w io.Writer, r devices.Report) error {
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
				humanize.Bytes(int64(g.MemoryFree)), humanize.Bytes(int64(g.MemoryTotal)), humanize.Bytes(int64(g.BAR1Free)), humanize.Bytes(int64(g.BAR1Total)),
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
