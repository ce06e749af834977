package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/progress"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/stage"
	"github.com/gdsload/gdsload/vfs"
)

// gpusJSON is the JSON of a load onto several GPUs.
type gpusJSON struct {
	*loader.GPUsResult
	Checkpoint string `json:"checkpoint,omitempty"`
	Tensors    int    `json:"tensors,omitempty"`
	BytesRead  int64  `json:"bytes_read"`
}

// parseDeviceMap reads --device-map: PREFIX=N,...
func parseDeviceMap(s string) (checkpoint.DeviceMap, error) {
	if s == "" {
		return nil, nil
	}
	m := checkpoint.DeviceMap{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return nil, usagef("--device-map %q: want PREFIX=N,... with N a device index", s)
		}
		m[k] = n
	}
	return m, nil
}

// runLoadGPUs loads paths onto the GPUs target names, all at once.
func runLoadGPUs(cmd *cobra.Command, o *loadOptions, paths []string, isCkpt bool, m *vfs.Mux, target loader.Target,
	topts []loader.TargetOption, lopts loader.Options, mode loader.DirectMode) error {
	dmap, err := parseDeviceMap(o.deviceMap)
	if err != nil {
		return err
	}
	if dmap != nil && !isCkpt {
		return usagef("--device-map places a checkpoint's tensors: give one checkpoint PATH")
	}
	set, err := loader.OpenGPUs(target, topts...)
	if err != nil {
		return err
	}
	defer set.Close()
	ctx := cmd.Context()
	out := gpusJSON{}
	if isCkpt {
		ck, err := checkpoint.Open(ctx, paths[0], checkpoint.Options{Direct: mode, FS: m})
		if err != nil {
			return err
		}
		defer ck.Close()
		bar := progress.Start(infoOut(cmd), "load", ck.Bytes())
		lopts.OnProgress = bar.Add
		on, err := ck.LoadGPUs(ctx, set, dmap, lopts)
		bar.Stop()
		if err != nil {
			return err
		}
		defer on.Close() // before the checkpoint: gds handles use its descriptors
		out = gpusJSON{GPUsResult: on.Result, Checkpoint: ck.Path(), Tensors: len(on.Devices), BytesRead: on.BytesRead}
	} else {
		files, err := m.OpenAll(ctx, paths, vfs.WithDirect(mode), vfs.WithSmallFilesBuffered(), vfs.WithoutDirs(stage.SidecarName))
		if err != nil {
			return err
		}
		defer files.Close()
		bar := progress.Start(infoOut(cmd), "load", files.Size())
		lopts.OnProgress = bar.Add
		res, err := set.Load(ctx, files.Sources(), lopts)
		bar.Stop()
		if err != nil {
			return err
		}
		out = gpusJSON{GPUsResult: res, BytesRead: res.Bytes}
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	return printLoadGPUs(cmd.OutOrStdout(), out)
}

func printLoadGPUs(w io.Writer, r gpusJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.Checkpoint != "" {
		fmt.Fprintf(tw, "checkpoint\t%s: %s\n", r.Checkpoint, humanize.Count(r.Tensors, "tensor"))
	}
	fmt.Fprintf(tw, "loaded\t%s onto %s in %.3f s, %.2f GiB/s\n", humanize.Bytes(r.Bytes), humanize.Count(len(r.GPUs), "GPU"), r.Seconds, r.GiBPerS)
	for _, g := range r.GPUs {
		fmt.Fprintf(tw, "gpu:%d\t%s in %s, %.2f GiB/s, path %s; staging %s\n", g.Device, humanize.Bytes(g.Bytes),
			humanize.Count(len(g.Files), "file"), g.GiBPerS, g.RouteLabel(), g.Staging)
		if g.Reason != "" {
			fmt.Fprintf(tw, "\treason: %s\n", g.Reason)
		}
	}
	return tw.Flush()
}
