package main

import (
	"runtime"
	"runtime/debug"
)

// versionInfo is gdsload_build_info's document.
type versionInfo struct {
	ABI      int    `json:"abi"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// abiVersion is GDSLOAD_ABI_VERSION; a test checks they agree.
const abiVersion = 1

func buildVersion() versionInfo {
	v := versionInfo{ABI: abiVersion, Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}
