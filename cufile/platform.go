package cufile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Platform is what this machine offers GPUDirect Storage beside the
// libraries, read from files only: no library is called.
type Platform struct {
	// NVIDIADriver is the first line of /proc/driver/nvidia/version (the
	// kernel driver's version); "" when no NVIDIA kernel driver is loaded.
	NVIDIADriver string `json:"nvidia_driver"`
	// NVIDIAFS is the first line of /proc/driver/nvidia-fs/version; ""
	// when the nvidia-fs module is not loaded.
	NVIDIAFS string `json:"nvidia_fs"`
	// NVIDIAFSStats reports whether /proc/driver/nvidia-fs/stats exists
	// (nvidia-fs counts its I/O there).
	NVIDIAFSStats bool `json:"nvidia_fs_stats"`
	// Udev reports whether /run/udev exists: cuFile looks NVMe devices up
	// through it, and containers often lack it.
	Udev bool `json:"udev"`
	// CuFileJSON is the cufile.json libcufile reads: CUFILE_ENV_PATH_JSON,
	// else /etc/cufile.json; CuFileJSONFound whether that file exists
	// (without one, libcufile uses its built-in defaults).
	CuFileJSON      string `json:"cufile_json"`
	CuFileJSONFound bool   `json:"cufile_json_found"`
	// LogFile is where libcufile writes its log (see Config.LogFile).
	LogFile string `json:"log_file"`
}

// ProbePlatform reads the files that say whether the NVIDIA driver and
// nvidia-fs are loaded, and which cufile.json and log file libcufile uses.
// It never fails; with cfg.Root set, the system files are read beneath it.
func ProbePlatform(cfg Config) Platform {
	sys := func(p string) string { return filepath.Join(cfg.Root, p) }
	p := Platform{
		NVIDIADriver:  firstLine(sys("/proc/driver/nvidia/version")),
		NVIDIAFS:      firstLine(sys("/proc/driver/nvidia-fs/version")),
		NVIDIAFSStats: exists(sys("/proc/driver/nvidia-fs/stats")),
		Udev:          exists(sys("/run/udev")),
		CuFileJSON:    cfg.getenv("CUFILE_ENV_PATH_JSON"),
	}
	if p.CuFileJSON == "" {
		p.CuFileJSON = "/etc/cufile.json"
		p.CuFileJSONFound = exists(sys(p.CuFileJSON))
	} else {
		p.CuFileJSONFound = exists(p.CuFileJSON)
	}
	p.LogFile, _ = cfg.logFile()
	return p
}

// firstLine returns the first non-empty line of the file at path, trimmed;
// "" when it cannot be read.
func firstLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			return l
		}
	}
	return ""
}

// CUDA driver API results a failed cuFileDriverOpen may carry.
const (
	cuErrorNoDevice = 100
)

// explainDriverOpen names the real cause of a failed cuFileDriverOpen,
// from what libcufile printed while it opened and what the machine has;
// "" when nothing more is known than the status code.
func explainDriverOpen(e *OpError, output string, p Platform) string {
	switch {
	case strings.Contains(output, "libcuda.so"):
		return "libcufile could not load libcuda.so.1, the NVIDIA driver's CUDA library: install the NVIDIA driver (in a container, start it with the NVIDIA container toolkit)"
	case p.NVIDIADriver == "":
		return "no NVIDIA kernel driver is loaded (/proc/driver/nvidia/version is absent): install the NVIDIA driver, or run on a machine with a GPU"
	case e.Code == CuFileCUDADriverError && e.CUDA == cuErrorNoDevice:
		return "the CUDA driver sees no GPU (CUDA_ERROR_NO_DEVICE): check nvidia-smi and CUDA_VISIBLE_DEVICES"
	case p.NVIDIAFS == "" && (e.Code == CuFileDriverNotInitialized || e.Code == cuFileNVFSDriverError || e.Code == cuFileNVFSSetupError):
		return fmt.Sprintf("the nvidia-fs kernel module is not loaded (/proc/driver/nvidia-fs is absent): load it (modprobe nvidia-fs), enable PCI P2PDMA (use_pci_p2pdma, CUDA 12.8+) or allow compat mode in %s", p.CuFileJSON)
	}
	return ""
}
