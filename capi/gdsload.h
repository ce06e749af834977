/*
 * gdsload.h: the C ABI of libgdsload.so, the shared library the Python
 * package (python/gdsload) loads with ctypes. Other languages may use it
 * too; this header is its contract.
 *
 * Versioning. gdsload_abi_version() returns GDSLOAD_ABI_VERSION of the
 * library. A caller refuses a library whose major version differs from the
 * one it was written for. New functions and new request or result fields
 * (the JSON documents below) are added without a version change; removing
 * or changing one bumps it.
 *
 * Processes. The library embeds a Go runtime, which starts when the library
 * is loaded and does not survive fork(): a child forked after the library
 * was loaded must call nothing but the functions marked "C only" below
 * (the Python package refuses, with an error that says what to do). Load
 * the library in each process that needs it.
 *
 * Memory. Strings and results the library returns are allocated with
 * malloc and freed by the caller with gdsload_free. Tensor memory is
 * allocated by the library outside the Go heap (page-aligned host memory,
 * or device memory) as one reference-counted allocation per checkpoint
 * file; DLPack tensors are views that each hold a reference, so the memory
 * lives until the last view is deleted. No Go-heap memory is ever handed
 * out.
 *
 * Errors. Functions that can fail return a gdsload_status and, on failure,
 * set *err to a malloc'd message (the text the gdsload CLI prints after
 * "gdsload: ").
 *
 * The functions the Go side implements take char * where const char *
 * would do: cgo cannot declare const parameters, and the build compiles
 * this header beside cgo's own declarations, so the two must agree
 * exactly (which is what keeps this header true).
 */
#ifndef GDSLOAD_H
#define GDSLOAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDSLOAD_ABI_VERSION 1
/* Additions to version 1, each a set of new functions: 1 added the
 * gdsload_checkpoint_* functions, 2 gdsload_checkpoint_shares.
 * gdsload_abi_minor() says what the library has; a caller that needs an
 * addition checks it. */
#define GDSLOAD_ABI_MINOR 2

typedef enum {
	GDSLOAD_OK = 0,
	GDSLOAD_NOT_FOUND = 1,      /* a file, directory or remote object is missing */
	GDSLOAD_PERMISSION = 2,     /* access refused, or rdmafs authentication failed */
	GDSLOAD_INVALID = 3,        /* a corrupt or unsupported file, or a bad request */
	GDSLOAD_CANCELED = 4,       /* gdsload_cancel was called */
	GDSLOAD_IO = 5,             /* any other failure (I/O, CUDA, network) */
	GDSLOAD_PENDING = 6,        /* gdsload_wait: not finished within the timeout */
	GDSLOAD_END = 7,            /* gdsload_next: the iteration is over */
	GDSLOAD_UNAVAILABLE = 8     /* no usable GPU, cuFile or transport for what was asked */
} gdsload_status;

/* The ABI version of the library (C only). */
int32_t gdsload_abi_version(void);

/* The additions to the ABI version the library has (GDSLOAD_ABI_MINOR). */
int32_t gdsload_abi_minor(void);

/* Frees what the library returned: messages, results, samples (C only). */
void gdsload_free(void *p);

/* A malloc'd JSON object: {"abi": 1, "version": "...", "revision": "..."}. */
char *gdsload_build_info(void);

/*
 * Jobs. Loads, saves and dataset opens run in the background; the caller
 * polls gdsload_wait with a timeout, so it can react to signals (Ctrl-C)
 * between polls and call gdsload_cancel. A job is forgotten once
 * gdsload_wait returned its final status. A job that failed with a
 * system error also sets *result to {"errno": N} (free it too), so the
 * caller can raise the error of that number.
 *
 * gdsload_load request (JSON): {"path": "model.safetensors" | "dir" |
 *   "x.safetensors.index.json" | "rdmafs://host:port/name",
 *   "device": "cpu" | "cuda:N", "gpu_path": "auto" | "gds" | "bounce",
 *   "direct": "auto" | "on" | "off", "workers": N, "chunk_size": bytes,
 *   "token": "rdmafs secret", "cache": folder of the node-local cache of
 *   s3:// and rdmafs:// files (none when absent), "cache_limit": bytes}
 * Result (JSON): {"checkpoint": path, "allocations": [{"handle": address
 *   of a gdsload_alloc, "size": bytes, "device_type": 1 (CPU) | 2 (CUDA),
 *   "device_id": N, "file": path, "ptr": address of byte 0}],
 *   "tensors": [{"name", "dtype" (safetensors name), "shape": [...],
 *   "alloc": index into allocations, "offset": bytes}], "metadata":
 *   {...} | null, "stats": the `gdsload load --json` result}.
 * The caller owns one reference to each allocation in the result and
 * drops it with gdsload_alloc_release once it made its views.
 *
 * gdsload_save request: {"path": "out.safetensors", "metadata": {...} |
 *   null, "tensors": [{"name", "dtype", "shape", "ptr": address, "bytes":
 *   length, "device_type": 1 | 2, "device_id": N}]}. The memory must stay
 *   valid and unchanged until the job ends. The file is written atomically
 *   (temporary name, fsync, rename). Result: the save's statistics.
 *
 * gdsload_dataset_open request: {"source": dir | manifest | pattern |
 *   rdmafs URL, "rank", "world_size", "consumer", "consumers",
 *   "partitions", "seed", "shuffle", "shuffle_bytes", "epochs",
 *   "drop_remainder", "workers", "prefetch", "verify", "token", "cache",
 *   "cache_limit", "cache_ahead": shards, "state": a saved state | null,
 *   "skip": samples of this consumer to skip after the state,
 *   "skip_bad_shards": leave out shards that cannot be read, warning on
 *   stderr}. Result: {"iterator": id, "samples": samples in the dataset,
 *   "shards": count, "fingerprint": "...", "root": the folder or URL that
 *   shard names are relative to}.
 */
gdsload_status gdsload_load(char *request, uint64_t *job, char **err);
gdsload_status gdsload_save(char *request, uint64_t *job, char **err);
gdsload_status gdsload_dataset_open(char *request, uint64_t *job, char **err);
gdsload_status gdsload_wait(uint64_t job, int32_t timeout_ms, char **result, char **err);
void gdsload_cancel(uint64_t job);

/*
 * Lazily opened checkpoints (ABI minor 1). gdsload_checkpoint_open reads
 * the headers only. Request: {"path", "direct", "token"} as for
 * gdsload_load. Result: {"checkpoint": handle, "path": the file or index
 * opened, "tensors": [{"name", "dtype", "shape"}] in file order,
 * "metadata": {...} | null, "header_bytes": bytes read}.
 *
 * gdsload_checkpoint_fetch reads only what is asked, every range of every
 * request in one pipelined load. Request: {"checkpoint": handle, "device",
 * "gpu_path", "workers", "chunk_size" as for gdsload_load, "max_gap":
 * bytes (0: 4096), "requests": [{"name", "slice": null (the whole tensor)
 * | [[start, step, count], ...] one per dimension, step >= 1}]}. A slice
 * reads through at most max_gap unselected bytes in a row; a dim-0 slice
 * is one range. Result: {"allocations": one per request, as gdsload_load's
 * (file: the tensor's name), "pieces": [{"name", "dtype", "shape",
 * "strides" (bytes), "base", "compact", "alloc"}], "stats": {"path",
 * "reason", "bytes", "bytes_read", "seconds", "gib_per_s", "ranges",
 * "device", "tensors"}}. Element i of a piece is at byte base +
 * sum(i[d] * strides[d]) of its allocation; compact says the allocation
 * is exactly the selection, row-major. The caller owns one reference to
 * each allocation.
 *
 * gdsload_checkpoint_close closes a handle, after the fetches in flight
 * on it ended; tensors already fetched stay valid.
 */
gdsload_status gdsload_checkpoint_open(char *request, uint64_t *job, char **err);
gdsload_status gdsload_checkpoint_fetch(char *request, uint64_t *job, char **err);
void gdsload_checkpoint_close(uint64_t checkpoint);

/*
 * Shares of a distributed load (ABI minor 2): which rank reads what from
 * storage so that each wanted byte is read once. Request: {"checkpoint":
 * handle, "max_gap": as for gdsload_checkpoint_fetch, "wants": [[rank 0's
 * requests, each {"name", "slice"} as gdsload_checkpoint_fetch takes
 * them], [rank 1's], ...]}. Result: {"shares": [{"reads": [{"name",
 * "want": index of the rank's request it reads for itself, or -1 for a
 * whole tensor it reads to hand to the ranks that want it, "bytes"}] in
 * checkpoint order, "bytes": N}, ...]} one per rank. A rank reads for
 * itself what it alone wants, and its part of a tensor whose requests are
 * disjoint single ranges (rows along dimension 0); the other tensors are
 * read whole, consecutive runs balanced by bytes
 * (checkpoint.Checkpoint.Shares says how).
 */
gdsload_status gdsload_checkpoint_shares(char *request, uint64_t *job, char **err);

/*
 * Iterators (from gdsload_dataset_open). gdsload_next waits up to
 * timeout_ms for the next sample and returns GDSLOAD_PENDING if none came,
 * GDSLOAD_END after the last one. A sample is a malloc'd record of *len
 * bytes, little-endian: u32 layout version (1), i64 epoch, i64 position,
 * i64 index in its shard, u8 padding, then strings (u32 length, bytes):
 * key, shard; u32 field count; per field a string (extension) and u64
 * length plus bytes. gdsload_state returns the state after the samples
 * returned so far (JSON, malloc'd).
 */
gdsload_status gdsload_next(uint64_t iterator, int32_t timeout_ms, void **sample, uint64_t *len, char **err);
gdsload_status gdsload_state(uint64_t iterator, char **state, char **err);
void gdsload_iterator_close(uint64_t iterator);

/*
 * Allocations and DLPack (all C only, safe in a forked child: device
 * memory of a parent is not freed there).
 *
 * gdsload_dlpack returns a new DLPack managed tensor viewing the
 * allocation's bytes from offset: a DLManagedTensor, or with versioned != 0
 * a DLManagedTensorVersioned (DLPack 1.0, flags READ_ONLY when readonly).
 * dtype is a DLPack type code and bits (lanes 1); shape has ndim entries;
 * strides are row-major. The tensor holds a reference on the allocation
 * until its deleter runs. NULL when out of memory or arguments are out of
 * range (the view would pass the end of the allocation).
 */
typedef struct gdsload_alloc gdsload_alloc;
void *gdsload_dlpack(gdsload_alloc *a, uint64_t offset, uint8_t code, uint8_t bits,
                     int32_t ndim, const int64_t *shape, int32_t versioned, int32_t readonly);
void gdsload_alloc_retain(gdsload_alloc *a);
void gdsload_alloc_release(gdsload_alloc *a);
/* Deletes a tensor from gdsload_dlpack that was never handed to a
 * consumer (a capsule could not be made, say). */
void gdsload_dlpack_delete(void *tensor, int32_t versioned);
/* Allocations alive in this process (made and not yet freed). */
int64_t gdsload_live_allocations(void);

/*
 * Python capsules. gdsload_capsule_api hands the library CPython's
 * PyCapsule_IsValid and PyCapsule_GetPointer; gdsload_capsule_destructor
 * is then a PyCapsule destructor that deletes a DLPack tensor no consumer
 * took (a consumer renames the capsule "used_dltensor"). Capsule names must
 * outlive the capsule: use gdsload_capsule_name's static strings.
 */
void gdsload_capsule_api(void *is_valid, void *get_pointer);
void gdsload_capsule_destructor(void *capsule);
const char *gdsload_capsule_name(int32_t versioned);

#ifdef __cplusplus
}
#endif

#endif /* GDSLOAD_H */
