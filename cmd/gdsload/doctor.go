package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/devices"
	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/spf13/cobra"
)

// doctorReport is `gdsload doctor`: what gdscheck -p says about GPUDirect
// Storage, plus what gdsload itself needs (O_DIRECT on the data's file
// system, locked memory for pinned and registered buffers) and which GPU
// path a load would take, and why.
type doctorReport struct {
	Libraries []cufile.Library `json:"libraries"`
	loader.GPUProbe
	RDMADevices  []devices.RDMA       `json:"rdma_devices"`
	RDMA         rdmafs.RDMAReport    `json:"rdma"`
	MemlockLimit loader.Memlock       `json:"memlock_limit"`
	DirectIO     loader.DirectIOProbe `json:"direct_io"`
	GDSPlatform  cufile.Platform      `json:"gds_platform"`
}

type doctorOptions struct {
	asJSON        bool
	device        int
	require       string
	sysRoot       string
	calibrate     bool
	calibrateSize string
}

func newDoctorCmd() *cobra.Command {
	o := doctorOptions{sysRoot: "/sys"}
	cmd := &cobra.Command{
		Use:   "doctor [PATH]",
		Short: "Check GPUDirect Storage, CUDA, O_DIRECT and memlock, and say which GPU path a load takes",
		Long: `doctor reports, like gdscheck -p, what this machine offers gdsload: the CUDA and
cuFile libraries found (and why not), the GDS mode libcufile runs in (p2pdma,
nvfs, compat), RDMA devices, the locked-memory limit, whether the file system
holding PATH (default: the current folder) accepts O_DIRECT, and the path a
load of PATH to the GPU would take (gds or bounce) with the reason.

With --require gds|bounce|host it exits 1 (after the report) when a load
cannot take that path, for CI jobs and node health checks: gds needs cuFile
in p2pdma or nvfs mode (compat mode does not count), bounce a usable GPU.

With --calibrate it measures instead how fast gds and bounce read into each GPU
from the file system holding each PATH (default: the current folder): a PATH
that is a file is read, in a folder a scratch file is written and removed. It
writes the figures to the node's route profile ($GDSLOAD_ROUTE_PROFILE, else
gdsload/routes-HOST.json in the user's cache folder), and load --to gpu|auto
then takes the faster route for that file system and GPU, saying so in its
reason. A profile measured with other driver or library versions is not used.

Libraries are found as gdsload loads them: GDSLOAD_LIBCUFILE,
GDSLOAD_LIBCUDART and GDSLOAD_LIBCUDA override the search.`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.calibrate {
				return runCalibrate(cmd, o, a)
			}
			if len(a) > 1 {
				return usagef("doctor takes one PATH (several with --calibrate), got %d", len(a))
			}
			if cmd.Flags().Changed("calibrate-size") {
				return usagef("--calibrate-size needs --calibrate")
			}
			path := "."
			if len(a) == 1 {
				path = a[0]
			}
			switch loader.Route(o.require) {
			case "", loader.RouteGDS, loader.RouteBounce, loader.RouteHost:
			default:
				return usagef("--require %q: want gds, bounce or host", o.require)
			}
			r, stack := runDoctor(o, path)
			defer stack.Close()
			var err error
			if o.asJSON {
				err = printJSON(cmd.OutOrStdout(), r)
			} else {
				err = printDoctor(cmd.OutOrStdout(), r)
			}
			if err == nil && o.require != "" {
				err = loader.RequireRoute(stack, o.device, loader.Route(o.require))
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON on stdout")
	cmd.Flags().IntVar(&o.device, "device", 0, "GPU to check the load path for")
	cmd.Flags().StringVar(&o.require, "require", "", "exit 1 unless a load can take this path: gds, bounce or host")
	cmd.Flags().BoolVar(&o.calibrate, "calibrate", false, "measure gds against bounce for the file system of each PATH and each GPU, and write the node's route profile for load's auto policy")
	cmd.Flags().StringVar(&o.calibrateSize, "calibrate-size", fmt.Sprintf("%dMiB", loader.DefaultCalibrateBytes>>20), "how much each measured read moves, such as 64MiB")
	return cmd
}

// calibrateReport is `gdsload doctor --calibrate --json`: the profile
// written, and where.
type calibrateReport struct {
	Profile string `json:"profile"`
	*loader.RouteProfile
}

func runCalibrate(cmd *cobra.Command, o doctorOptions, paths []string) error {
	if o.require != "" {
		return usagef("--require and --calibrate: run them apart")
	}
	size, err := humanize.ParseBytes(o.calibrateSize)
	if err != nil {
		return usagef("--calibrate-size %q: %v", o.calibrateSize, err)
	}
	if size < loader.MinCalibrateBytes || size > loader.MaxCalibrateBytes || size%loader.DefaultAlignment != 0 {
		return usagef("--calibrate-size %q: want a multiple of 4 KiB from %s to %s", o.calibrateSize,
			humanize.Bytes(loader.MinCalibrateBytes), humanize.Bytes(loader.MaxCalibrateBytes))
	}
	opts := []loader.CalibrateOption{loader.WithCalibrateBytes(size)}
	where := loader.DefaultRouteProfilePath()
	if where == "" {
		return fmt.Errorf("no folder for the route profile: no user cache folder, or %s=off; set %s to a file", loader.RouteProfileEnv, loader.RouteProfileEnv)
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	stack := loader.OpenGPUStack(cufile.Config{})
	defer stack.Close()
	p, err := loader.Calibrate(cmd.Context(), stack, paths, opts...)
	if err != nil {
		return err
	}
	if p, err = loader.UpdateRouteProfile(where, p); err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), calibrateReport{Profile: where, RouteProfile: p})
	}
	return printCalibrate(cmd.OutOrStdout(), where, p)
}

func printCalibrate(w io.Writer, where string, p *loader.RouteProfile) error {
	fmt.Fprintf(w, "route profile  %s\n", where)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "file system\tGPU\tgds\tbounce\tfaster\tmeasured")
	for _, m := range p.Pairs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", m.FileSystem, m.GPU, m.GDS, m.Bounce,
			orNone(string(m.Faster), fmt.Sprintf("neither (within %.0f%%)", loader.RouteMargin*100)), m.MeasuredAt.UTC().Format("2006-01-02 15:04 MST"))
	}
	return tw.Flush()
}

// runDoctor makes the report; the caller closes the stack it used.
func runDoctor(o doctorOptions, path string) (doctorReport, *loader.GPUStack) {
	cfg := cufile.Config{}
	r := doctorReport{
		Libraries:    cufile.ProbeLibraries(cfg),
		RDMADevices:  devices.RDMADevices(o.sysRoot),
		RDMA:         rdmafs.ProbeRDMA(),
		MemlockLimit: loader.MemlockLimit(),
		DirectIO:     loader.ProbeDirectIO(path),
	}
	r.Libraries = append(r.Libraries, cufile.ProbeLibrary("libnvidia-ml.so.1"), cufile.ProbeLibrary("libibverbs.so.1"))

	stack := loader.OpenGPUStack(cfg)
	r.GPUProbe = stack.ProbeData(o.device, loader.DefaultRouteProfilePath(), path)
	r.GDSPlatform = cufile.ProbePlatform(cfg)
	return r, stack
}

func printDoctor(w io.Writer, r doctorReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Libraries")
	for _, l := range r.Libraries {
		if l.Found {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Name, l.Version, l.Path)
		} else {
			fmt.Fprintf(tw, "  %s\tmissing\t%s\n", l.Name, l.Error)
		}
	}
	fmt.Fprintln(tw, "CUDA")
	if r.GPUError != "" {
		fmt.Fprintf(tw, "  GPUs\t%d\t%s\n", r.GPUCount, r.GPUError)
	} else {
		fmt.Fprintf(tw, "  GPUs\t%d\n", r.GPUCount)
	}
	if r.CUDADriverVersion != "" || r.CUDARuntimeVersion != "" {
		fmt.Fprintf(tw, "  driver / runtime\t%s / %s\n", r.CUDADriverVersion, r.CUDARuntimeVersion)
	}
	fmt.Fprintln(tw, "GPUDirect Storage")
	fmt.Fprintf(tw, "  mode\t%s\t%s\n", r.GDSMode, r.GDSReason)
	for _, l := range strings.Split(r.GDSMessages, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			fmt.Fprintf(tw, "  libcufile said\t%s\n", l)
		}
	}
	pl := r.GDSPlatform
	fmt.Fprintf(tw, "  NVIDIA kernel driver\t%s\n", orNone(pl.NVIDIADriver, "not loaded (no /proc/driver/nvidia/version)"))
	fmt.Fprintf(tw, "  nvidia-fs module\t%s\n", orNone(pl.NVIDIAFS, "not loaded (no /proc/driver/nvidia-fs)"))
	fmt.Fprintf(tw, "  /run/udev\t%s\n", map[bool]string{true: "present", false: "absent (cuFile cannot look NVMe devices up)"}[pl.Udev])
	fmt.Fprintf(tw, "  cufile.json\t%s\t%s\n", pl.CuFileJSON, map[bool]string{true: "found", false: "absent: built-in defaults"}[pl.CuFileJSONFound])
	fmt.Fprintf(tw, "  cufile log\t%s\n", pl.LogFile)
	if p := r.CuFileProperties; p != nil {
		fmt.Fprintf(tw, "  nvidia-fs\t%d.%d\n", p.NVFSMajor, p.NVFSMinor)
		fmt.Fprintf(tw, "  max direct I/O\t%d KiB\n", p.MaxDirectIOKiB)
		fmt.Fprintf(tw, "  max pinned memory\t%d KiB\n", p.MaxPinnedMemKiB)
	}
	fmt.Fprintln(tw, "RDMA devices")
	if len(r.RDMADevices) == 0 {
		fmt.Fprintln(tw, "  none")
	}
	for _, d := range r.RDMADevices {
		var states []string
		for _, p := range d.Ports {
			states = append(states, fmt.Sprintf("port %d %s %s", p.Port, p.LinkLayer, p.State))
		}
		fw := ""
		if d.Firmware != "" {
			fw = ", firmware " + d.Firmware
		}
		fmt.Fprintf(tw, "  %s\tNUMA %s%s\t%s\n", d.Name, numaString(d.NUMANode), fw, strings.Join(states, "; "))
	}
	fmt.Fprintln(tw, "RDMA (rdma-core, as the verbs transport loads it)")
	for _, l := range r.RDMA.Lines() {
		fmt.Fprintf(tw, "  %s\n", l)
	}
	fmt.Fprintln(tw, "Limits")
	fmt.Fprintf(tw, "  memlock\tsoft %s, hard %s\t%s\n", r.MemlockLimit.Soft, r.MemlockLimit.Hard, r.MemlockLimit.Note)
	fmt.Fprintln(tw, "Direct I/O")
	ok := "refused"
	if r.DirectIO.OK {
		ok = "ok"
	}
	fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.DirectIO.Path, ok, r.DirectIO.Reason)
	if r.DirectIO.OffsetAlign > 0 {
		fmt.Fprintf(tw, "  alignment\tmemory %d, offset %d (statx)\n", r.DirectIO.MemAlign, r.DirectIO.OffsetAlign)
	}
	fmt.Fprintln(tw, "GPU load")
	fmt.Fprintf(tw, "  gpu:%d\t%s\t%s\n", r.GPULoad.Device, r.GPULoad.Path, r.GPULoad.Reason)
	return tw.Flush()
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
