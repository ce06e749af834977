//go:build !linux

package loader

import "path/filepath"

// MemlockLimit reports that the limit is not read outside Linux.
func MemlockLimit() Memlock { return Memlock{Note: "not read outside Linux"} }

// ProbeDirectIO reports that O_DIRECT is only supported on Linux.
func ProbeDirectIO(path string) DirectIOProbe {
	abs, _ := filepath.Abs(path)
	return DirectIOProbe{Path: abs, Reason: "O_DIRECT is only supported on Linux"}
}
