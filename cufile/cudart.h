// cudart.h: the subset of libcudart gdsload calls, as function pointers
// filled by dlsym, and the static trampolines cgo calls them through.
#ifndef GDSLOAD_CUDART_H
#define GDSLOAD_CUDART_H
#include "dlsym.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The subset of libcudart gdsload calls; streams and events are opaque.
typedef struct {
	int (*getDeviceCount)(int *);
	int (*setDevice)(int);
	int (*memGetInfo)(size_t *, size_t *);
	int (*malloc)(void **, size_t);
	int (*free)(void *);
	int (*hostAlloc)(void **, size_t, unsigned);
	int (*freeHost)(void *);
	int (*hostRegister)(void *, size_t, unsigned);
	int (*hostUnregister)(void *);
	int (*memcpy)(void *, const void *, size_t, int);
	int (*memcpyAsync)(void *, const void *, size_t, int, void *);
	int (*streamCreateWithFlags)(void **, unsigned);
	int (*streamSynchronize)(void *);
	int (*streamDestroy)(void *);
	int (*eventCreateWithFlags)(void **, unsigned);
	int (*eventRecord)(void *, void *);
	int (*eventSynchronize)(void *);
	int (*eventQuery)(void *);
	int (*eventDestroy)(void *);
	const char *(*getErrorString)(int);
	int (*driverGetVersion)(int *);
	int (*runtimeGetVersion)(int *);
	// Optional (CUDA 11.3+): NULL when the library lacks it.
	int (*flushGPUDirectRDMAWrites)(int, int);
	// Optional: NULL when the library lacks it.
	int (*deviceGetPCIBusId)(char *, int, int);
} gd_cudart;


// gd_cudart_load fills f from h and returns NULL, or the first missing name.
static inline const char *gd_cudart_load(void *h, gd_cudart *f) {
	GD_SYM(h, f, getDeviceCount, "cudaGetDeviceCount")
	GD_SYM(h, f, setDevice, "cudaSetDevice")
	GD_SYM(h, f, memGetInfo, "cudaMemGetInfo")
	GD_SYM(h, f, malloc, "cudaMalloc")
	GD_SYM(h, f, free, "cudaFree")
	GD_SYM(h, f, hostAlloc, "cudaHostAlloc")
	GD_SYM(h, f, freeHost, "cudaFreeHost")
	GD_SYM(h, f, hostRegister, "cudaHostRegister")
	GD_SYM(h, f, hostUnregister, "cudaHostUnregister")
	GD_SYM(h, f, memcpy, "cudaMemcpy")
	GD_SYM(h, f, memcpyAsync, "cudaMemcpyAsync")
	GD_SYM(h, f, streamCreateWithFlags, "cudaStreamCreateWithFlags")
	GD_SYM(h, f, streamSynchronize, "cudaStreamSynchronize")
	GD_SYM(h, f, streamDestroy, "cudaStreamDestroy")
	GD_SYM(h, f, eventCreateWithFlags, "cudaEventCreateWithFlags")
	GD_SYM(h, f, eventRecord, "cudaEventRecord")
	GD_SYM(h, f, eventSynchronize, "cudaEventSynchronize")
	GD_SYM(h, f, eventQuery, "cudaEventQuery")
	GD_SYM(h, f, eventDestroy, "cudaEventDestroy")
	GD_SYM(h, f, getErrorString, "cudaGetErrorString")
	GD_SYM(h, f, driverGetVersion, "cudaDriverGetVersion")
	GD_SYM(h, f, runtimeGetVersion, "cudaRuntimeGetVersion")
	GD_OPT(h, f, flushGPUDirectRDMAWrites, "cudaDeviceFlushGPUDirectRDMAWrites")
	GD_OPT(h, f, deviceGetPCIBusId, "cudaDeviceGetPCIBusId")
	return NULL;
}

// Trampolines: cgo cannot call through C function pointers itself. Device
// pointers travel as uintptr_t so Go never holds them as unsafe.Pointer.
static inline int gd_getDeviceCount(gd_cudart *f, int *n) { return f->getDeviceCount(n); }
static inline int gd_setDevice(gd_cudart *f, int d) { return f->setDevice(d); }
static inline int gd_memGetInfo(gd_cudart *f, size_t *fr, size_t *t) { return f->memGetInfo(fr, t); }
static inline int gd_malloc(gd_cudart *f, uintptr_t *p, size_t n) {
	void *v = NULL;
	int e = f->malloc(&v, n);
	*p = (uintptr_t)v;
	return e;
}
static inline int gd_free(gd_cudart *f, uintptr_t p) { return f->free((void *)p); }
static inline int gd_hostAlloc(gd_cudart *f, void **p, size_t n, unsigned fl) { return f->hostAlloc(p, n, fl); }
static inline int gd_freeHost(gd_cudart *f, void *p) { return f->freeHost(p); }
static inline int gd_hostRegister(gd_cudart *f, void *p, size_t n, unsigned fl) { return f->hostRegister(p, n, fl); }
static inline int gd_hostUnregister(gd_cudart *f, void *p) { return f->hostUnregister(p); }
static inline int gd_memcpyHtoD(gd_cudart *f, uintptr_t d, const void *s, size_t n) { return f->memcpy((void *)d, s, n, 1); }
static inline int gd_memcpyDtoH(gd_cudart *f, void *d, uintptr_t s, size_t n) { return f->memcpy(d, (const void *)s, n, 2); }
static inline int gd_memcpyHtoDAsync(gd_cudart *f, uintptr_t d, const void *s, size_t n, void *st) {
	return f->memcpyAsync((void *)d, s, n, 1, st);
}
static inline int gd_memcpyDtoHAsync(gd_cudart *f, void *d, uintptr_t s, size_t n, void *st) {
	return f->memcpyAsync(d, (const void *)s, n, 2, st);
}
static inline int gd_streamCreate(gd_cudart *f, void **s, unsigned fl) { return f->streamCreateWithFlags(s, fl); }
static inline int gd_streamSynchronize(gd_cudart *f, void *s) { return f->streamSynchronize(s); }
static inline int gd_streamDestroy(gd_cudart *f, void *s) { return f->streamDestroy(s); }
static inline int gd_eventCreate(gd_cudart *f, void **e, unsigned fl) { return f->eventCreateWithFlags(e, fl); }
static inline int gd_eventRecord(gd_cudart *f, void *e, void *s) { return f->eventRecord(e, s); }
static inline int gd_eventSynchronize(gd_cudart *f, void *e) { return f->eventSynchronize(e); }
static inline int gd_eventQuery(gd_cudart *f, void *e) { return f->eventQuery(e); }
static inline int gd_eventDestroy(gd_cudart *f, void *e) { return f->eventDestroy(e); }
static inline const char *gd_getErrorString(gd_cudart *f, int e) { return f->getErrorString(e); }
static inline int gd_driverGetVersion(gd_cudart *f, int *v) { return f->driverGetVersion(v); }
static inline int gd_runtimeGetVersion(gd_cudart *f, int *v) { return f->runtimeGetVersion(v); }
static inline int gd_hasFlushGPUDirectRDMAWrites(gd_cudart *f) { return f->flushGPUDirectRDMAWrites != NULL; }
static inline int gd_flushGPUDirectRDMAWrites(gd_cudart *f, int target, int scope) {
	return f->flushGPUDirectRDMAWrites(target, scope);
}
static inline int gd_deviceGetPCIBusId(gd_cudart *f, char *id, int len, int d) {
	return f->deviceGetPCIBusId ? f->deviceGetPCIBusId(id, len, d) : -1;
}
#endif
