package loader

// Memlock is the process's locked-memory limit (RLIMIT_MEMLOCK), which
// pinned host buffers and RDMA registrations count against, with a note
// when it is too low for a load with default settings (outside Linux it
// is not read, and the note says so).
type Memlock struct {
	Soft      string `json:"soft"` // bytes, or "unlimited"
	Hard      string `json:"hard"`
	SoftBytes uint64 `json:"soft_bytes"`
	Note      string `json:"note,omitempty"`
}

// DirectIOProbe says whether O_DIRECT works where the data lives, and
// the alignment the file system wants (statx STATX_DIOALIGN; Linux only).
type DirectIOProbe struct {
	Path        string `json:"path"`
	FileSystem  string `json:"file_system"`
	OK          bool   `json:"ok"`
	Reason      string `json:"reason"`
	MemAlign    uint32 `json:"dio_mem_align,omitempty"`    // statx STATX_DIOALIGN
	OffsetAlign uint32 `json:"dio_offset_align,omitempty"` // statx STATX_DIOALIGN
}
