package cufile

import "fmt"

// cuFileBaseErr is CUFILEOP_BASE_ERR: cuFile status codes are 5000 + n.
const cuFileBaseErr = 5000

// Status codes (CUfileOpError) the package interprets. The full list is in
// opErrorNames; codes newer libraries add print as their number.
const (
	CuFileSuccess              = 0
	CuFileDriverNotInitialized = 5001
	CuFileCUDADriverError      = 5011
	CuFileDIONotSet            = 5020

	cuFileNVFSDriverError = 5010
	cuFileNVFSSetupError  = 5033
)

var opErrorNames = map[int]string{
	0:    "CU_FILE_SUCCESS",
	5001: "CU_FILE_DRIVER_NOT_INITIALIZED",
	5002: "CU_FILE_DRIVER_INVALID_PROPS",
	5003: "CU_FILE_DRIVER_UNSUPPORTED_LIMIT",
	5004: "CU_FILE_DRIVER_VERSION_MISMATCH",
	5005: "CU_FILE_DRIVER_VERSION_READ_ERROR",
	5006: "CU_FILE_DRIVER_CLOSING",
	5007: "CU_FILE_PLATFORM_NOT_SUPPORTED",
	5008: "CU_FILE_IO_NOT_SUPPORTED",
	5009: "CU_FILE_DEVICE_NOT_SUPPORTED",
	5010: "CU_FILE_NVFS_DRIVER_ERROR",
	5011: "CU_FILE_CUDA_DRIVER_ERROR",
	5012: "CU_FILE_CUDA_POINTER_INVALID",
	5013: "CU_FILE_CUDA_MEMORY_TYPE_INVALID",
	5014: "CU_FILE_CUDA_POINTER_RANGE_ERROR",
	5015: "CU_FILE_CUDA_CONTEXT_MISMATCH",
	5016: "CU_FILE_INVALID_MAPPING_SIZE",
	5017: "CU_FILE_INVALID_MAPPING_RANGE",
	5018: "CU_FILE_INVALID_FILE_TYPE",
	5019: "CU_FILE_INVALID_FILE_OPEN_FLAG",
	5020: "CU_FILE_DIO_NOT_SET",
	5022: "CU_FILE_INVALID_VALUE",
	5023: "CU_FILE_MEMORY_ALREADY_REGISTERED",
	5024: "CU_FILE_MEMORY_NOT_REGISTERED",
	5025: "CU_FILE_PERMISSION_DENIED",
	5026: "CU_FILE_DRIVER_ALREADY_OPEN",
	5027: "CU_FILE_HANDLE_NOT_REGISTERED",
	5028: "CU_FILE_HANDLE_ALREADY_REGISTERED",
	5029: "CU_FILE_DEVICE_NOT_FOUND",
	5030: "CU_FILE_INTERNAL_ERROR",
	5031: "CU_FILE_GETNEWFD_FAILED",
	5033: "CU_FILE_NVFS_SETUP_ERROR",
	5034: "CU_FILE_IO_DISABLED",
	5035: "CU_FILE_BATCH_SUBMIT_FAILED",
	5036: "CU_FILE_GPU_MEMORY_PINNING_FAILED",
	5037: "CU_FILE_BATCH_FULL",
	5038: "CU_FILE_ASYNC_NOT_SUPPORTED",
	5039: "CU_FILE_INTERNAL_BATCH_SETUP_ERROR",
	5040: "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR",
	5041: "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR",
	5042: "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR",
	5043: "CU_FILE_NOMEM_ERROR",
	5044: "CU_FILE_IO_ERROR",
	5045: "CU_FILE_INTERNAL_BUF_REGISTER_ERROR",
	5046: "CU_FILE_HASH_OPR_ERROR",
	5047: "CU_FILE_INVALID_CONTEXT_ERROR",
	5048: "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR",
	5049: "CU_FILE_BATCH_NOCOMPAT_ERROR",
}

// OpErrorName returns the CUfileOpError name of code, or "CUfileOpError"
// for a code this package does not know (newer libraries add codes; the
// number is always printed beside the name).
func OpErrorName(code int) string {
	if n, ok := opErrorNames[code]; ok {
		return n
	}
	return "CUfileOpError"
}

// OpError is a failed cuFile call: a CUfileError_t status, or a negative
// -CUfileOpError returned by cuFileRead or cuFileWrite.
type OpError struct {
	// Op names the call and its subject, such as "cuFileDriverOpen" or
	// "cuFileHandleRegister(fd 7)".
	Op string
	// Code is the CUfileOpError (5000 + n).
	Code int
	// CUDA is the CUresult when Code is CU_FILE_CUDA_DRIVER_ERROR.
	CUDA int
	// Cause, for a failed driver open, names the real cause where it is
	// known (libcuda.so.1 missing, no NVIDIA driver, nvidia-fs not
	// loaded), found from Output and the machine's files.
	Cause string
	// Output is what libcufile printed while the call ran (it prints its
	// diagnostics on standard output; gdsload captures them). Error leaves
	// it out: it is for detailed reports (gdsload doctor).
	Output string
}

func (e *OpError) Error() string {
	s := fmt.Sprintf("%s failed: %s (%d)", e.Op, OpErrorName(e.Code), e.Code)
	if e.Code == CuFileCUDADriverError {
		s += fmt.Sprintf(": CUDA driver error %d", e.CUDA)
	}
	switch {
	case e.Cause != "":
		s += ": " + e.Cause
	case e.Code == CuFileDriverNotInitialized:
		s += "; load nvidia-fs, enable PCI P2PDMA (use_pci_p2pdma) or allow compat mode in cufile.json"
	case e.Code == CuFileDIONotSet:
		s += "; open the file with O_DIRECT"
	}
	return s
}

// isCuFileCode reports whether a negated cuFileRead/cuFileWrite result is a
// cuFile status rather than an errno (IS_CUFILE_ERR in cufile.h).
func isCuFileCode(code int) bool { return code > cuFileBaseErr }
