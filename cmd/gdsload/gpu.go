package main

import (
	"context"
	"fmt"

	"github.com/gdsload/gdsload/bench"
)

// TEMPORARY until the cufile destinations land.
func gpuBenchModes(device int) ([]bench.Mode, map[string]string) {
	why := "no GPU support yet"
	return nil, map[string]string{"gds": why, "bounce": why, "cached-bounce": why}
}

func gpuModeHelp() [][2]string {
	return [][2]string{
		{"gds", "cuFileRead from storage straight into GPU memory (gdsio GPUD)"},
		{"bounce", "O_DIRECT reads into pinned host buffers, async copies to the GPU (gdsio CPU_GPU)"},
		{"cached-bounce", "buffered reads (page cache) into pinned buffers, async copies (gdsio CPU_CACHED_GPU)"},
	}
}

func openDestination(ctx context.Context, t target, srcs *openedSources, chunk int64, workers int) (*destination, error) {
	switch t.kind {
	case "host":
		return hostRing(chunk, workers, "host destination requested")
	case "auto":
		return hostRing(chunk, workers, "no GPU path: not built yet")
	}
	return nil, fmt.Errorf("gpu:%d: not yet", t.device)
}
