package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gdsload/gdsload/loader"
)

// decodeRequest parses a request document into v, refusing unknown
// fields: a misspelled option must not be silently ignored.
func decodeRequest(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return requestError{fmt.Sprintf("request: %v", err)}
	}
	return nil
}

// device is where tensors land: the host, or GPU ID.
type device struct {
	gpu bool
	id  int
}

// parseDevice reads "cpu", "cuda", "cuda:N" (or "gpu:N").
func parseDevice(s string) (device, error) {
	switch s {
	case "", "cpu", "host":
		return device{}, nil
	case "cuda", "gpu":
		return device{gpu: true}, nil
	}
	for _, p := range []string{"cuda:", "gpu:"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			n, err := strconv.Atoi(rest)
			if err == nil && n >= 0 {
				return device{gpu: true, id: n}, nil
			}
		}
	}
	return device{}, requestError{fmt.Sprintf("device %q: want \"cpu\", \"cuda\" or \"cuda:N\"", s)}
}

// parseDirect reads the O_DIRECT mode: "auto" (or ""), "on", "off".
func parseDirect(s string) (loader.DirectMode, error) {
	switch s {
	case "", "auto":
		return loader.DirectAuto, nil
	case "on":
		return loader.DirectOn, nil
	case "off":
		return loader.DirectOff, nil
	}
	return 0, requestError{fmt.Sprintf("direct %q: want \"auto\", \"on\" or \"off\"", s)}
}

// parseGPUPath reads the route to a GPU: "auto" (or "", returned as ""
// for the library's policy), "gds", "bounce".
func parseGPUPath(s string) (loader.Route, error) {
	switch s {
	case "", "auto":
		return "", nil
	case "gds":
		return loader.RouteGDS, nil
	case "bounce":
		return loader.RouteBounce, nil
	}
	return "", requestError{fmt.Sprintf("gpu_path %q: want \"auto\", \"gds\" or \"bounce\"", s)}
}
