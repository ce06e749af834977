/*
 * alloc.c: reference-counted allocations, the DLPack views of them, and
 * the PyCapsule destructor. Plain C, so views can be made and deleted in
 * any thread and in a forked child, where the Go runtime does not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dlpack.h"
#include "gdsload.h"
#include "internal.h"

/* Defined in Go (exports.go). */
extern void gdsloadReleaseHandle(uintptr_t handle);

enum { ALLOC_HOST = 1, ALLOC_OWNED = 2 };

struct gdsload_alloc {
	void *base;
	uint64_t size;    /* bytes a view may reach */
	uint64_t mapped;  /* bytes mapped (host), page-rounded */
	int32_t kind;
	int32_t device_type, device_id;
	uintptr_t handle; /* ALLOC_OWNED: what gdsloadReleaseHandle frees */
	pid_t pid;        /* the process that made it */
	atomic_long refs;
};

static atomic_long live_allocations;

int32_t gdsload_abi_version(void) { return GDSLOAD_ABI_VERSION; }

void gdsload_free(void *p) { free(p); }

int64_t gdsload_live_allocations(void) { return atomic_load(&live_allocations); }

static gdsload_alloc *alloc_new(void) {
	gdsload_alloc *a = calloc(1, sizeof *a);
	if (a == NULL) return NULL;
	a->pid = getpid();
	atomic_init(&a->refs, 1);
	atomic_fetch_add(&live_allocations, 1);
	return a;
}

gdsload_alloc *gdsload_alloc_host(uint64_t size) {
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0) page = 4096;
	uint64_t mapped = size == 0 ? (uint64_t)page : (size + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
	if (mapped < size || mapped > (uint64_t)SIZE_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = mmap(NULL, (size_t)mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return NULL;
	gdsload_alloc *a = alloc_new();
	if (a == NULL) {
		munmap(p, (size_t)mapped);
		errno = ENOMEM;
		return NULL;
	}
	a->base = p;
	a->size = size;
	a->mapped = mapped;
	a->kind = ALLOC_HOST;
	a->device_type = kDLCPU;
	return a;
}

gdsload_alloc *gdsload_alloc_owned(uint64_t base, uint64_t size, int32_t device_type, int32_t device_id, uintptr_t handle) {
	gdsload_alloc *a = alloc_new();
	if (a == NULL) return NULL;
	a->base = (void *)(uintptr_t)base;
	a->size = size;
	a->kind = ALLOC_OWNED;
	a->device_type = device_type;
	a->device_id = device_id;
	a->handle = handle;
	return a;
}

void *gdsload_alloc_base(gdsload_alloc *a) { return a->base; }
uint64_t gdsload_alloc_size(gdsload_alloc *a) { return a->size; }

void gdsload_alloc_retain(gdsload_alloc *a) {
	if (a != NULL) atomic_fetch_add(&a->refs, 1);
}

void gdsload_alloc_release(gdsload_alloc *a) {
	if (a == NULL || atomic_fetch_sub(&a->refs, 1) != 1) return;
	switch (a->kind) {
	case ALLOC_HOST:
		munmap(a->base, (size_t)a->mapped);
		break;
	case ALLOC_OWNED:
		/* A forked child shares nothing of its parent's device memory and
		 * has no Go runtime to call: leave it to the parent. */
		if (a->pid == getpid()) gdsloadReleaseHandle(a->handle);
		break;
	}
	atomic_fetch_sub(&live_allocations, 1);
	free(a);
}

/* One view: the managed tensor, its shape and strides, and the allocation
 * it holds, in one malloc'd block. */
typedef struct {
	union {
		DLManagedTensor legacy;
		DLManagedTensorVersioned versioned;
	} m;
	gdsload_alloc *alloc;
	int64_t dims[]; /* shape, then strides */
} view;

static void delete_legacy(DLManagedTensor *self) {
	view *v = (view *)self->manager_ctx;
	gdsload_alloc_release(v->alloc);
	free(v);
}

static void delete_versioned(DLManagedTensorVersioned *self) {
	view *v = (view *)self->manager_ctx;
	gdsload_alloc_release(v->alloc);
	free(v);
}

void *gdsload_dlpack(gdsload_alloc *a, uint64_t offset, uint8_t code, uint8_t bits,
                     int32_t ndim, const int64_t *shape, int32_t versioned, int32_t readonly) {
	if (a == NULL || ndim < 0 || ndim > 64 || bits == 0 || bits % 8 != 0 || (ndim > 0 && shape == NULL)) return NULL;
	/* The view must lie inside the allocation: count its bytes with
	 * overflow checks, as a hostile shape must not reach past the end. */
	uint64_t n = 1;
	for (int32_t i = 0; i < ndim; i++) {
		if (shape[i] < 0) return NULL;
		if (shape[i] != 0 && n > UINT64_MAX / (uint64_t)shape[i]) return NULL;
		n *= (uint64_t)shape[i];
	}
	uint64_t elem = bits / 8;
	if (n > UINT64_MAX / elem) return NULL;
	uint64_t bytes = n * elem;
	if (offset > a->size || bytes > a->size - offset) return NULL;

	view *v = calloc(1, sizeof(view) + 2 * (size_t)ndim * sizeof(int64_t));
	if (v == NULL) return NULL;
	int64_t *sh = v->dims, *st = v->dims + ndim;
	int64_t stride = 1;
	for (int32_t i = ndim - 1; i >= 0; i--) {
		sh[i] = shape[i];
		st[i] = stride;
		stride *= shape[i] > 0 ? shape[i] : 1;
	}
	/* The offset goes into data, not byte_offset: consumers such as torch
	 * before 2.0 ignore byte_offset, and torch itself exports views so. */
	DLTensor t = {
		.data = (char *)a->base + offset,
		.device = {a->device_type, a->device_id},
		.ndim = ndim,
		.dtype = {code, bits, 1},
		.shape = ndim > 0 ? sh : NULL,
		.strides = ndim > 0 ? st : NULL,
		.byte_offset = 0,
	};
	v->alloc = a;
	gdsload_alloc_retain(a);
	if (versioned) {
		v->m.versioned.version.major = GDSLOAD_DLPACK_MAJOR;
		v->m.versioned.version.minor = GDSLOAD_DLPACK_MINOR;
		v->m.versioned.manager_ctx = v;
		v->m.versioned.deleter = delete_versioned;
		v->m.versioned.flags = readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
		v->m.versioned.dl_tensor = t;
	} else {
		v->m.legacy.dl_tensor = t;
		v->m.legacy.manager_ctx = v;
		v->m.legacy.deleter = delete_legacy;
	}
	return v;
}

void gdsload_dlpack_delete(void *tensor, int32_t versioned) {
	if (tensor == NULL) return;
	if (versioned) {
		DLManagedTensorVersioned *m = tensor;
		m->deleter(m);
	} else {
		DLManagedTensor *m = tensor;
		m->deleter(m);
	}
}

static const char name_legacy[] = "dltensor";
static const char name_versioned[] = "dltensor_versioned";

const char *gdsload_capsule_name(int32_t versioned) { return versioned ? name_versioned : name_legacy; }

typedef int (*capsule_is_valid)(void *capsule, const char *name);
typedef void *(*capsule_get_pointer)(void *capsule, const char *name);

static _Atomic(capsule_is_valid) py_is_valid;
static _Atomic(capsule_get_pointer) py_get_pointer;

void gdsload_capsule_api(void *is_valid, void *get_pointer) {
	atomic_store(&py_is_valid, (capsule_is_valid)is_valid);
	atomic_store(&py_get_pointer, (capsule_get_pointer)get_pointer);
}

/* Runs with the GIL held when a capsule dies. A consumer that took the
 * tensor renamed the capsule ("used_dltensor") and owns the deleter call;
 * otherwise the tensor is deleted here. Neither PyCapsule_IsValid nor
 * PyCapsule_GetPointer with the right name raises, so no exception state
 * needs saving. */
void gdsload_capsule_destructor(void *capsule) {
	capsule_is_valid is_valid = atomic_load(&py_is_valid);
	capsule_get_pointer get_pointer = atomic_load(&py_get_pointer);
	if (is_valid == NULL || get_pointer == NULL) return;
	if (is_valid(capsule, name_legacy)) {
		DLManagedTensor *m = get_pointer(capsule, name_legacy);
		if (m != NULL && m->deleter != NULL) m->deleter(m);
	} else if (is_valid(capsule, name_versioned)) {
		DLManagedTensorVersioned *m = get_pointer(capsule, name_versioned);
		if (m != NULL && m->deleter != NULL) m->deleter(m);
	}
}
