package loader

// Path names the route bytes take from storage to the destination. The
// names follow the transfer types gdsio users know.
type Path string

// The data paths.
const (
	// PathGDS reads with cuFileRead from storage straight into GPU memory
	// (gdsio GPUD).
	PathGDS Path = "gds"
	// PathBounce reads into pinned host buffers and copies them to the GPU
	// asynchronously (gdsio CPU_GPU).
	PathBounce Path = "bounce"
	// PathHost reads into host memory (gdsio CPUONLY).
	PathHost Path = "host"
	// PathRDMA has a remote server write into registered memory.
	PathRDMA Path = "rdma"
)
