package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdsload/gdsload/loader"
)

// target is the parsed --to flag.
type target struct {
	kind   string // "host", "gpu" or "auto"
	device int
}

func parseTarget(s string) (target, error) {
	switch {
	case s == "host" || s == "auto":
		return target{kind: s}, nil
	case s == "gpu":
		return target{kind: "gpu"}, nil
	case strings.HasPrefix(s, "gpu:"):
		n, err := strconv.Atoi(s[4:])
		if err != nil || n < 0 {
			return target{}, fmt.Errorf("--to %q: want host, auto, gpu or gpu:N with N a device index", s)
		}
		return target{kind: "gpu", device: n}, nil
	}
	return target{}, fmt.Errorf("--to %q: want host, auto, gpu or gpu:N", s)
}

// destination is where a CLI load lands, with the path and why.
type destination struct {
	path   loader.Route
	reason string
	jobs   func([]loader.Source) []loader.Job
	close  func()
}

// hostRing streams every source through one ring of reused buffers.
func hostRing(chunk int64, workers int, reason string) (*destination, error) {
	ring, err := loader.NewRing(2*workers, chunk)
	if err != nil {
		return nil, err
	}
	return &destination{
		path:   loader.RouteHost,
		reason: reason,
		jobs: func(srcs []loader.Source) []loader.Job {
			jobs := make([]loader.Job, len(srcs))
			for i, s := range srcs {
				jobs[i] = loader.WholeFile(s, ring)
			}
			return jobs
		},
		close: func() { _ = ring.Close() },
	}, nil
}
