/*
 * internal.h: what the Go side of libgdsload calls in its C side
 * (alloc.c). Not part of the ABI.
 */
#ifndef GDSLOAD_INTERNAL_H
#define GDSLOAD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gdsload.h"

#define GDSLOAD_HIDDEN __attribute__((visibility("hidden")))

/* gdsload_alloc_host maps size bytes of anonymous, page-aligned host
 * memory (at least one page, so a view of an empty file still has an
 * address) with one reference; NULL with errno set on failure. */
GDSLOAD_HIDDEN gdsload_alloc *gdsload_alloc_host(uint64_t size);

/* gdsload_alloc_owned wraps memory the Go side owns (device memory): when
 * the last reference goes, gdsloadReleaseHandle(handle) is called, in the
 * process that made it only. */
GDSLOAD_HIDDEN gdsload_alloc *gdsload_alloc_owned(uint64_t base, uint64_t size, int32_t device_type, int32_t device_id, uintptr_t handle);

/* The address of byte 0 and the size of an allocation. */
GDSLOAD_HIDDEN void *gdsload_alloc_base(gdsload_alloc *a);
GDSLOAD_HIDDEN uint64_t gdsload_alloc_size(gdsload_alloc *a);

#endif /* GDSLOAD_INTERNAL_H */
