// Package buildinfo says which build of gdsload is running: the module
// version and the VCS revision the Go toolchain recorded in the binary.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info is what `gdsload version --json` prints.
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Read returns the running binary's Info; Version is "(devel)" for a
// build outside a released module.
func Read() Info {
	v := Info{Version: "(devel)", Go: runtime.Version()}
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
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version line for people: "gdsload VERSION REVISION GO".
func (v Info) String() string {
	rev := v.Revision
	if rev == "" {
		rev = "unknown revision"
	}
	if v.Modified {
		rev += " (modified)"
	}
	return "gdsload " + v.Version + " " + rev + " " + v.Go
}
