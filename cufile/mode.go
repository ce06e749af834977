package cufile

import "fmt"

// Mode is how cuFile moves data, as gdscheck reports it.
type Mode string

// The GDS modes.
const (
	// ModeP2PDMA: Linux PCI P2PDMA, storage DMA straight into GPU memory
	// without nvidia-fs (CUDA 12.8+).
	ModeP2PDMA Mode = "p2pdma"
	// ModeNVFS: the nvidia-fs kernel driver does the DMA.
	ModeNVFS Mode = "nvfs"
	// ModeCompat: cuFile's POSIX fallback: reads go through host memory
	// inside libcufile, so GDS brings nothing over the bounce path.
	ModeCompat Mode = "compat"
	// ModeUnavailable: cuFile cannot be used at all.
	ModeUnavailable Mode = "unavailable"
)

// cuFile parameter and flag values (cufile.h).
const (
	paramForceCompatMode = 2 // CUFILE_PARAM_FORCE_COMPAT_MODE
	paramUsePCIP2PDMA    = 7 // CUFILE_PARAM_USE_PCIP2PDMA
	statusNVMeSupported  = 4 // CU_FILE_NVME_SUPPORTED
	controlAllowCompat   = 1 // CU_FILE_ALLOW_COMPAT_MODE: a bit index in ControlFlags
	p2pFlagPCIP2PDMA     = 1 << 0
	p2pFlagNVFS          = 1 << 1
)

// Mode asks the open driver which mode it runs in and says on what
// evidence. Only libcufile is asked (never lsmod): force_compat_mode,
// then cuFileDriverGetP2PFlags for NVMe (cuFile 1.16+), then the nvidia-fs
// version in the driver properties, then the use_pci_p2pdma parameter.
// With none of them, cuFile is in compat mode.
func (d *Driver) Mode() (Mode, string, error) {
	props, err := d.Properties()
	if err != nil {
		return ModeUnavailable, err.Error(), err
	}
	if force, ok := d.paramBool(paramForceCompatMode); ok && force {
		return ModeCompat, "force_compat_mode is set in cufile.json", nil
	}
	if flags, ok := d.p2pFlags(statusNVMeSupported); ok {
		switch {
		case flags&p2pFlagPCIP2PDMA != 0:
			return ModeP2PDMA, fmt.Sprintf("cuFileDriverGetP2PFlags(NVMe) = %#x: PCI P2PDMA", flags), nil
		case flags&p2pFlagNVFS != 0:
			return ModeNVFS, fmt.Sprintf("cuFileDriverGetP2PFlags(NVMe) = %#x: nvidia-fs", flags), nil
		}
	}
	if props.NVFSMajor > 0 {
		return ModeNVFS, fmt.Sprintf("nvidia-fs %d.%d in use", props.NVFSMajor, props.NVFSMinor), nil
	}
	if p2p, ok := d.paramBool(paramUsePCIP2PDMA); ok && p2p {
		return ModeP2PDMA, "use_pci_p2pdma is enabled", nil
	}
	return ModeCompat, "neither nvidia-fs nor PCI P2PDMA in use: cuFile falls back to POSIX I/O", nil
}
