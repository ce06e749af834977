// cufileapi.h: the subset of libcufile gdsload calls, as function pointers
// filled by dlsym, and the static trampolines cgo calls them through.
// Types follow cufile.h's ABI (CUfileError_t is two ints returned by value).
#ifndef GDSLOAD_CUFILEAPI_H
#define GDSLOAD_CUFILEAPI_H
#include "dlsym.h"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct { int err; int cu_err; } gd_cferr;

typedef struct {
	int type; // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
	union { int fd; void *handle; } handle;
	const void *fs_ops;
} gd_cfdescr;

typedef struct {
	struct {
		unsigned int major_version, minor_version;
		size_t poll_thresh_size, max_direct_io_size;
		unsigned int dstatusflags, dcontrolflags;
	} nvfs;
	unsigned int fflags, max_device_cache_size, per_buffer_cache_size;
	unsigned int max_device_pinned_mem_size, max_batch_io_size, max_batch_io_timeout_msecs;
} gd_cfprops;

typedef struct {
	gd_cferr (*driverOpen)(void);
	gd_cferr (*driverClose)(void);
	gd_cferr (*driverCloseV2)(void);             // optional
	gd_cferr (*getVersion)(int *);               // optional
	gd_cferr (*getProperties)(gd_cfprops *);
	gd_cferr (*getParameterBool)(int, bool *);   // optional (CUDA 12.9+)
	gd_cferr (*getP2PFlags)(int, int *);         // optional (cuFile 1.16+)
	gd_cferr (*handleRegister)(void **, gd_cfdescr *);
	void (*handleDeregister)(void *);
	gd_cferr (*bufRegister)(const void *, size_t, int);
	gd_cferr (*bufDeregister)(const void *);
	ssize_t (*read)(void *, void *, size_t, off_t, off_t);
	ssize_t (*write)(void *, const void *, size_t, off_t, off_t);
} gd_cufile;


static inline const char *gd_cufile_load(void *h, gd_cufile *f) {
	GD_SYM(h, f, driverOpen, "cuFileDriverOpen")
	GD_SYM(h, f, driverClose, "cuFileDriverClose")
	GD_OPT(h, f, driverCloseV2, "cuFileDriverClose_v2")
	GD_OPT(h, f, getVersion, "cuFileGetVersion")
	GD_SYM(h, f, getProperties, "cuFileDriverGetProperties")
	GD_OPT(h, f, getParameterBool, "cuFileGetParameterBool")
	GD_OPT(h, f, getP2PFlags, "cuFileDriverGetP2PFlags")
	GD_SYM(h, f, handleRegister, "cuFileHandleRegister")
	GD_SYM(h, f, handleDeregister, "cuFileHandleDeregister")
	GD_SYM(h, f, bufRegister, "cuFileBufRegister")
	GD_SYM(h, f, bufDeregister, "cuFileBufDeregister")
	GD_SYM(h, f, read, "cuFileRead")
	GD_SYM(h, f, write, "cuFileWrite")
	return NULL;
}

static inline gd_cferr gd_cf_unsupported(void) { gd_cferr e = {-1, 0}; return e; }

// gd_stdio_swap sends the process's standard output and error to fd (when
// fd >= 0) and saves the originals in saved; gd_stdio_restore puts them
// back. libcufile prints its own diagnostics on standard output, where
// they would corrupt a --json report.
static inline void gd_stdio_swap(int fd, int saved[2]) {
	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < 2; i++) {
		saved[i] = -1;
		if (fd < 0) continue;
		saved[i] = fcntl(i + 1, F_DUPFD_CLOEXEC, 3);
		if (saved[i] >= 0 && dup2(fd, i + 1) < 0) {
			close(saved[i]);
			saved[i] = -1;
		}
	}
}
static inline void gd_stdio_restore(int saved[2]) {
	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < 2; i++) {
		if (saved[i] < 0) continue;
		dup2(saved[i], i + 1);
		close(saved[i]);
	}
}

// gd_cfDriverOpen and gd_cfDriverClose run the call with standard output
// and error sent to out (-1: left alone).
static inline gd_cferr gd_cfDriverOpen(gd_cufile *f, int out) {
	int saved[2];
	gd_stdio_swap(out, saved);
	gd_cferr e = f->driverOpen();
	gd_stdio_restore(saved);
	return e;
}
static inline gd_cferr gd_cfDriverClose(gd_cufile *f, int out) {
	int saved[2];
	gd_stdio_swap(out, saved);
	gd_cferr e = f->driverCloseV2 ? f->driverCloseV2() : f->driverClose();
	gd_stdio_restore(saved);
	return e;
}
static inline gd_cferr gd_cfGetVersion(gd_cufile *f, int *v) {
	return f->getVersion ? f->getVersion(v) : gd_cf_unsupported();
}
// gd_cfGetProperties reads into a padded buffer so a newer library with a
// longer struct cannot write past it.
static inline gd_cferr gd_cfGetProperties(gd_cufile *f, gd_cfprops *out) {
	union { gd_cfprops p; char pad[1024]; } u;
	memset(&u, 0, sizeof u);
	gd_cferr e = f->getProperties(&u.p);
	*out = u.p;
	return e;
}
static inline gd_cferr gd_cfGetParameterBool(gd_cufile *f, int param, int *v) {
	bool b = false;
	if (!f->getParameterBool) return gd_cf_unsupported();
	gd_cferr e = f->getParameterBool(param, &b);
	*v = b;
	return e;
}
static inline gd_cferr gd_cfGetP2PFlags(gd_cufile *f, int status_flag, int *v) {
	if (!f->getP2PFlags) return gd_cf_unsupported();
	return f->getP2PFlags(status_flag, v);
}
static inline gd_cferr gd_cfHandleRegister(gd_cufile *f, uintptr_t *out, int fd) {
	gd_cfdescr d;
	void *h = NULL;
	memset(&d, 0, sizeof d);
	d.type = 1;
	d.handle.fd = fd;
	gd_cferr e = f->handleRegister(&h, &d);
	*out = (uintptr_t)h;
	return e;
}
static inline void gd_cfHandleDeregister(gd_cufile *f, uintptr_t h) { f->handleDeregister((void *)h); }
static inline gd_cferr gd_cfBufRegister(gd_cufile *f, uintptr_t p, size_t n) {
	return f->bufRegister((const void *)p, n, 0);
}
static inline gd_cferr gd_cfBufDeregister(gd_cufile *f, uintptr_t p) { return f->bufDeregister((const void *)p); }
static inline ssize_t gd_cfRead(gd_cufile *f, uintptr_t h, uintptr_t base, size_t n, int64_t foff, int64_t boff) {
	errno = 0;
	return f->read((void *)h, (void *)base, n, (off_t)foff, (off_t)boff);
}
static inline ssize_t gd_cfWrite(gd_cufile *f, uintptr_t h, uintptr_t base, size_t n, int64_t foff, int64_t boff) {
	errno = 0;
	return f->write((void *)h, (const void *)base, n, (off_t)foff, (off_t)boff);
}
#endif
