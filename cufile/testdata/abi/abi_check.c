/*
 * abi_check.c: checks that cufileapi.h, gdsload's own declarations of the
 * libcufile calls it makes, matches NVIDIA's cufile.h. TestCuFileABI
 * compiles it against the real cufile.h (libcufile-dev, or a CUDA
 * toolkit) with cuda.h from this folder standing in for CUDA's, and runs
 * it: the static asserts check at compile time every struct, union, enum
 * value and function type cufileapi.h relies on; the program prints the
 * CUfileOpError table of the header for the test to compare with
 * operror.go's names.
 *
 * The test passes -D flags: GO_<name> for each constant of the Go side
 * (mode.go, operror.go), and GD_HAS_<call> for each optional call the
 * header declares (older headers lack them).
 */
#include <stddef.h>
#include <stdio.h>

#include <cufile.h>

#include "cufileapi.h"

#define SAME_LAYOUT(ours, theirs)                                                  \
	_Static_assert(sizeof(ours) == sizeof(theirs), #ours " and " #theirs " differ in size"); \
	_Static_assert(_Alignof(ours) == _Alignof(theirs), #ours " and " #theirs " differ in alignment")
#define SAME_FIELD(ours, of, theirs, tf)                                                \
	_Static_assert(offsetof(ours, of) == offsetof(theirs, tf), #ours "." #of " is not at " #theirs "." #tf); \
	_Static_assert(sizeof(((ours *)0)->of) == sizeof(((theirs *)0)->tf), #ours "." #of " and " #theirs "." #tf " differ in size")

/* CUfileError_t, returned by value by most calls. */
SAME_LAYOUT(gd_cferr, CUfileError_t);
SAME_FIELD(gd_cferr, err, CUfileError_t, err);
SAME_FIELD(gd_cferr, cu_err, CUfileError_t, cu_err);
_Static_assert(sizeof(CUfileOpError) == sizeof(int), "CUfileOpError is not int-sized");
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult is not int-sized");

/* CUfileDescr_t, passed to cuFileHandleRegister. */
SAME_LAYOUT(gd_cfdescr, CUfileDescr_t);
SAME_FIELD(gd_cfdescr, type, CUfileDescr_t, type);
SAME_FIELD(gd_cfdescr, handle, CUfileDescr_t, handle);
SAME_FIELD(gd_cfdescr, handle.fd, CUfileDescr_t, handle.fd);
SAME_FIELD(gd_cfdescr, handle.handle, CUfileDescr_t, handle.handle);
SAME_FIELD(gd_cfdescr, fs_ops, CUfileDescr_t, fs_ops);
_Static_assert(CU_FILE_HANDLE_TYPE_OPAQUE_FD == 1, "gd_cfHandleRegister sets type 1 for CU_FILE_HANDLE_TYPE_OPAQUE_FD");

/* CUfileDrvProps_t, filled by cuFileDriverGetProperties (gdsload reads it
 * into a larger padded buffer, so a longer struct in a newer header is
 * safe; the fields it reads must sit where the header puts them). */
_Static_assert(sizeof(gd_cfprops) <= sizeof(CUfileDrvProps_t), "gd_cfprops is longer than CUfileDrvProps_t");
SAME_FIELD(gd_cfprops, nvfs.major_version, CUfileDrvProps_t, nvfs.major_version);
SAME_FIELD(gd_cfprops, nvfs.minor_version, CUfileDrvProps_t, nvfs.minor_version);
SAME_FIELD(gd_cfprops, nvfs.poll_thresh_size, CUfileDrvProps_t, nvfs.poll_thresh_size);
SAME_FIELD(gd_cfprops, nvfs.max_direct_io_size, CUfileDrvProps_t, nvfs.max_direct_io_size);
SAME_FIELD(gd_cfprops, nvfs.dstatusflags, CUfileDrvProps_t, nvfs.dstatusflags);
SAME_FIELD(gd_cfprops, nvfs.dcontrolflags, CUfileDrvProps_t, nvfs.dcontrolflags);
SAME_FIELD(gd_cfprops, fflags, CUfileDrvProps_t, fflags);
SAME_FIELD(gd_cfprops, max_device_cache_size, CUfileDrvProps_t, max_device_cache_size);
SAME_FIELD(gd_cfprops, per_buffer_cache_size, CUfileDrvProps_t, per_buffer_cache_size);
SAME_FIELD(gd_cfprops, max_device_pinned_mem_size, CUfileDrvProps_t, max_device_pinned_mem_size);
SAME_FIELD(gd_cfprops, max_batch_io_size, CUfileDrvProps_t, max_batch_io_size);
SAME_FIELD(gd_cfprops, max_batch_io_timeout_msecs, CUfileDrvProps_t, max_batch_io_timeout_msecs);

/* The Go side's constants. */
_Static_assert(CUFILEOP_BASE_ERR == GO_cuFileBaseErr, "CUFILEOP_BASE_ERR");
_Static_assert(CU_FILE_SUCCESS == GO_CuFileSuccess, "CU_FILE_SUCCESS");
_Static_assert(CU_FILE_DRIVER_NOT_INITIALIZED == GO_CuFileDriverNotInitialized, "CU_FILE_DRIVER_NOT_INITIALIZED");
_Static_assert(CU_FILE_CUDA_DRIVER_ERROR == GO_CuFileCUDADriverError, "CU_FILE_CUDA_DRIVER_ERROR");
_Static_assert(CU_FILE_DIO_NOT_SET == GO_CuFileDIONotSet, "CU_FILE_DIO_NOT_SET");
_Static_assert(CU_FILE_NVFS_DRIVER_ERROR == GO_cuFileNVFSDriverError, "CU_FILE_NVFS_DRIVER_ERROR");
_Static_assert(CU_FILE_NVFS_SETUP_ERROR == GO_cuFileNVFSSetupError, "CU_FILE_NVFS_SETUP_ERROR");
_Static_assert(CU_FILE_NVME_SUPPORTED == GO_statusNVMeSupported, "CU_FILE_NVME_SUPPORTED");
_Static_assert(CU_FILE_ALLOW_COMPAT_MODE == GO_controlAllowCompat, "CU_FILE_ALLOW_COMPAT_MODE (a bit index)");
_Static_assert(sizeof(CUfileDriverStatusFlags_t) == sizeof(int), "CUfileDriverStatusFlags_t is not int-sized");

/* SAME_CALL checks that cufile.h declares fn with the type SIG gives for
 * the header's types, and that gdsload's pointer has the type SIG gives
 * for its own stand-ins (whose layouts are checked above): the two differ
 * only in that mapping. */
#define SAME_CALL(fn, field, real_t, ours_t)                                                   \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&fn), real_t), #fn ": cufile.h declares another type"); \
	_Static_assert(__builtin_types_compatible_p(__typeof__(((gd_cufile *)0)->field), ours_t), "gd_cufile." #field ": another type than " #fn)

#define SIG_VOID(E) E (*)(void)
SAME_CALL(cuFileDriverOpen, driverOpen, SIG_VOID(CUfileError_t), SIG_VOID(gd_cferr));
SAME_CALL(cuFileDriverClose, driverClose, SIG_VOID(CUfileError_t), SIG_VOID(gd_cferr));
SAME_CALL(cuFileDriverClose_v2, driverCloseV2, SIG_VOID(CUfileError_t), SIG_VOID(gd_cferr));
#define SIG_PROPS(E, P) E (*)(P *)
SAME_CALL(cuFileDriverGetProperties, getProperties, SIG_PROPS(CUfileError_t, CUfileDrvProps_t), SIG_PROPS(gd_cferr, gd_cfprops));
#define SIG_HREG(E, H, D) E (*)(H *, D *)
SAME_CALL(cuFileHandleRegister, handleRegister, SIG_HREG(CUfileError_t, CUfileHandle_t, CUfileDescr_t),
          SIG_HREG(gd_cferr, void *, gd_cfdescr));
#define SIG_HDEREG(H) void (*)(H)
SAME_CALL(cuFileHandleDeregister, handleDeregister, SIG_HDEREG(CUfileHandle_t), SIG_HDEREG(void *));
#define SIG_BREG(E) E (*)(const void *, size_t, int)
SAME_CALL(cuFileBufRegister, bufRegister, SIG_BREG(CUfileError_t), SIG_BREG(gd_cferr));
#define SIG_BDEREG(E) E (*)(const void *)
SAME_CALL(cuFileBufDeregister, bufDeregister, SIG_BDEREG(CUfileError_t), SIG_BDEREG(gd_cferr));
#define SIG_READ(H) ssize_t (*)(H, void *, size_t, off_t, off_t)
SAME_CALL(cuFileRead, read, SIG_READ(CUfileHandle_t), SIG_READ(void *));
#define SIG_WRITE(H) ssize_t (*)(H, const void *, size_t, off_t, off_t)
SAME_CALL(cuFileWrite, write, SIG_WRITE(CUfileHandle_t), SIG_WRITE(void *));

#ifdef GD_HAS_cuFileGetVersion
#define SIG_VERSION(E) E (*)(int *)
SAME_CALL(cuFileGetVersion, getVersion, SIG_VERSION(CUfileError_t), SIG_VERSION(gd_cferr));
#endif
#ifdef GD_HAS_cuFileGetParameterBool
#define SIG_PBOOL(E, P) E (*)(P, bool *)
SAME_CALL(cuFileGetParameterBool, getParameterBool, SIG_PBOOL(CUfileError_t, CUFileBoolConfigParameter_t),
          SIG_PBOOL(gd_cferr, int));
_Static_assert(sizeof(CUFileBoolConfigParameter_t) == sizeof(int), "CUFileBoolConfigParameter_t is not int-sized");
_Static_assert(CUFILE_PARAM_FORCE_COMPAT_MODE == GO_paramForceCompatMode, "CUFILE_PARAM_FORCE_COMPAT_MODE");
_Static_assert(CUFILE_PARAM_USE_PCIP2PDMA == GO_paramUsePCIP2PDMA, "CUFILE_PARAM_USE_PCIP2PDMA");
#endif
#ifdef GD_HAS_cuFileDriverGetP2PFlags
#define SIG_P2P(E, S, F) E (*)(S, F *)
SAME_CALL(cuFileDriverGetP2PFlags, getP2PFlags, SIG_P2P(CUfileError_t, CUfileDriverStatusFlags_t, CUfileP2PFlags_t),
          SIG_P2P(gd_cferr, int, int));
_Static_assert(sizeof(CUfileP2PFlags_t) == sizeof(int), "CUfileP2PFlags_t is not int-sized");
_Static_assert(CU_FILE_P2P_FLAG_PCI_P2PDMA == GO_p2pFlagPCIP2PDMA, "CU_FILE_P2P_FLAG_PCI_P2PDMA");
#endif

int main(void) {
	/* The header's whole CUfileOpError table, one "code name" a line. */
#define CUFILE_OP(code, name, string) printf("%d %s\n", (int)(code), #name);
	CUFILEOP_STATUS_ENTRIES
#undef CUFILE_OP
	return 0;
}
