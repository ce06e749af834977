//go:build !linux

package loader

import "path/filepath"

// Memlock is the process's locked-memory limit (RLIMIT_MEMLOCK); outside
// Linux it is not read.
type Memlock struct {
	Soft      string `json:"soft"`
	Hard      string `json:"hard"`
	SoftBytes uint64 `json:"soft_bytes"`
	Note      string `json:"note,omitempty"`
}

// DirectIOProbe says whether O_DIRECT works where the data lives.
type DirectIOProbe struct {
	Path        string `json:"path"`
	FileSystem  string `json:"file_system"`
	OK          bool   `json:"ok"`
	Reason      string `json:"reason"`
	MemAlign    uint32 `json:"dio_mem_align,omitempty"`
	OffsetAlign uint32 `json:"dio_offset_align,omitempty"`
}

// MemlockLimit reports that the limit is not read outside Linux.
func MemlockLimit() Memlock { return Memlock{Note: "not read outside Linux"} }

// ProbeDirectIO reports that O_DIRECT is only supported on Linux.
func ProbeDirectIO(path string) DirectIOProbe {
	abs, _ := filepath.Abs(path)
	return DirectIOProbe{Path: abs, Reason: "O_DIRECT is only supported on Linux"}
}
