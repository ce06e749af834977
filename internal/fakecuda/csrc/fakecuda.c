/*
 * fakecuda.c: a test double of the parts of libcudart, libcufile and libcuda
 * that gdsload calls, for machines without a GPU.
 *
 * It behaves like the real libraries where bugs hide:
 *  - device memory is a memfd mapped PROT_NONE at the address handed out, so
 *    a host dereference of a device pointer faults; the double reaches the
 *    bytes through a second, read-write mapping of the same memfd;
 *  - cudaMemcpyAsync copies run later, on the stream's own thread, after a
 *    delay, reading the host buffer when they run (as a DMA engine would), so
 *    reusing a pinned buffer before its event completed lands wrong bytes;
 *  - the current device is per thread;
 *  - cuFile wants a registered handle on an O_DIRECT descriptor and an open
 *    driver, and cuFileRead and cuFileWrite move bytes of device memory of
 *    the calling thread's current device (else CU_FILE_CUDA_CONTEXT_MISMATCH),
 *    as cuFileBufRegister and cuFileBufDeregister do;
 *  - misuse is refused and counted (counter "misuse", text from
 *    fakecuda_misuse): a deregistered or unknown cuFile handle, memory
 *    freed or a stream destroyed while async copies on it are pending, a
 *    double cudaHostRegister, an unknown pointer freed, a handle
 *    deregistered after its file descriptor was closed;
 *  - leaks are counted: allocations, pinned memory, streams, events, cuFile
 *    handles and buffer registrations (a buffer freed while registered stays
 *    counted), driver references, and dma-buf descriptors still open;
 *  - fault "nocuda" makes cuFileDriverOpen behave as Debian's libcufile 1.4
 *    does without libcuda.so.1: it prints its diagnostics on standard
 *    output, appends them to cufile.log (in the current folder unless
 *    CUFILE_LOGFILE_PATH names another file) and fails with
 *    CU_FILE_NVFS_SETUP_ERROR.
 *
 * Faults and settings come from FAKECUDA_* environment variables at load
 * time and from fakecuda_control() at any time (see control below).
 * One shared object exports all three APIs; the tests link it under the
 * names libcudart.so.13, libcufile.so.0 and libcuda.so.1 (symlinks, so the
 * dynamic loader maps it once and the three share this state).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 16
#define PAGE 4096UL

/* ---------------------------------------------------------------- state */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ndev;
static size_t devmem;
static char mode[16];
static char fault[64];
static long delay_us;
static size_t used[MAXDEV];
static long live_pinned, live_streams, live_events, live_handles, live_bufreg, driver_refs;
/* What callers of the driver API (libcuda: NVIDIA's libcufile) hold,
 * counted apart from gdsload's runtime calls: libcufile keeps its bounce
 * buffers and streams until the process exits. */
static long cu_pinned, cu_streams, cu_events;
static unsigned long long next_buffer_id;
static long long async_bytes, cufile_reads, cufile_unaligned, rdma_flushes, misuse;
static char misuse_what[256];
static __thread int cur_dev;
/* Route speeds (below). */
static void pace_defaults(void);
static int pace_control(const char *cmd);

/* Devices and contexts. A CUdevice is the ordinal. Each device has one
 * primary context; cuCtxCreate makes others. Each thread has a stack of
 * current contexts; the runtime half's device is the top one's. */
struct ctx {
  int dev, primary, refs, live;
};
static struct ctx primary_ctx[MAXDEV];
#define CTXDEPTH 16
static __thread struct ctx *ctx_stack[CTXDEPTH];
static __thread int ctx_depth;

static struct ctx *current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

/* set_current binds c (NULL: none) as the top of the calling thread's
 * stack and makes its device the runtime half's current device. */
static void set_current(struct ctx *c) {
  if (!c) {
    if (ctx_depth) ctx_depth--;
    return;
  }
  if (!ctx_depth) ctx_depth = 1;
  ctx_stack[ctx_depth - 1] = c;
  cur_dev = c->dev;
}

/* dma-buf descriptors handed out, to count those still open. */
struct dmabuf {
  int fd;
  dev_t dev;
  ino_t ino;
  struct dmabuf *next;
};
static struct dmabuf *dmabufs;

/* cuFile handles registered and not yet deregistered, with the identity
 * of the file their descriptor named. */
struct fh {
  int fd;
  dev_t dev;
  ino_t ino;
  struct fh *next;
};
static struct fh *handles;

struct stream;
static struct stream *streams; /* live streams, for the pending-copy checks */

struct alloc {
  uintptr_t dev; /* PROT_NONE view handed out */
  char *rw;      /* the double's own view */
  size_t n, mapped;
  int dev_id, fd, bufreg;
  int drv;                     /* made through the driver API (cuMemAlloc) */
  unsigned long long buffer_id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
  unsigned sync_memops;
  struct alloc *next;
};
static struct alloc *allocs;

struct pinned {
  char *p;
  size_t n;
  int registered; /* cudaHostRegister, not cudaHostAlloc */
  int drv;        /* made through the driver API */
  struct pinned *next;
};
static struct pinned *pinned_list;

static void gpus_defaults(void);

static void set_defaults(void) {
  const char *e;
  ndev = 1;
  devmem = 1UL << 30;
  strcpy(mode, "nvfs");
  fault[0] = 0;
  delay_us = 200;
  if ((e = getenv("FAKECUDA_DEVICES"))) ndev = atoi(e);
  if ((e = getenv("FAKECUDA_MEM"))) devmem = strtoull(e, NULL, 10);
  if ((e = getenv("FAKECUDA_MODE"))) snprintf(mode, sizeof mode, "%s", e);
  if ((e = getenv("FAKECUDA_COMPAT")) && atoi(e)) strcpy(mode, "compat");
  if ((e = getenv("FAKECUDA_FAIL"))) snprintf(fault, sizeof fault, "%s", e);
  if ((e = getenv("FAKECUDA_DELAY_US"))) delay_us = atol(e);
  pace_defaults();
  if (ndev > MAXDEV) ndev = MAXDEV;
  gpus_defaults();
  for (int i = 0; i < MAXDEV; i++) {
    primary_ctx[i].dev = i;
    primary_ctx[i].primary = 1;
  }
}

static void init(void) { pthread_once(&once, set_defaults); }

/* fault_is reports whether the injected fault is name (or name:ARG). */
static bool fault_is(const char *name, long long *arg) {
  size_t n = strlen(name);
  bool hit;
  pthread_mutex_lock(&mu);
  hit = strncmp(fault, name, n) == 0 && (fault[n] == 0 || fault[n] == ':');
  if (hit && arg) *arg = fault[n] == ':' ? strtoll(fault + n + 1, NULL, 10) : -1;
  pthread_mutex_unlock(&mu);
  return hit;
}

/* misused records one refused misuse of the API. Caller holds mu. */
static void misused(const char *what) {
  misuse++;
  snprintf(misuse_what, sizeof misuse_what, "%s", what);
}

/* find returns the allocation holding [p, p+n), or NULL. Caller holds mu.
 * An allocation that p is inside wins over one that p is just past the
 * end of: mmap may place two allocations back to back, and the base of
 * the later one is then also the end of the earlier one (a size that is
 * a whole number of pages); taking the earlier one made reads into the
 * later one fail with a range error, depending on the order of the list. */
static struct alloc *find(uintptr_t p, size_t n) {
  struct alloc *end = NULL;
  for (struct alloc *a = allocs; a; a = a->next) {
    if (p < a->dev || p - a->dev > a->n || n > a->n - (p - a->dev)) continue;
    if (p - a->dev < a->n) return a;
    if (!end) end = a;
  }
  return end;
}

/* rw_of translates a device range into the double's view, or NULL. */
static char *rw_of(uintptr_t p, size_t n) {
  char *r = NULL;
  pthread_mutex_lock(&mu);
  struct alloc *a = find(p, n);
  if (a) r = a->rw + (p - a->dev);
  pthread_mutex_unlock(&mu);
  return r;
}


/* ------------------------------------------------------- many devices */

/* Each device's copies are tracked so tests can see several devices
 * working at once: a device is busy while a copy into or out of its
 * memory runs (a stream's copy, a synchronous cudaMemcpy, a cuFileRead or
 * cuFileWrite). Counter "max_busy_devices" is the most devices busy at
 * the same moment since the last reset. With "wait_all_ms=N" (or
 * FAKECUDA_WAIT_ALL_MS) a device's copy that finds fewer than all devices
 * ever busy together waits up to N ms for the others to start, once per
 * reset: loads that run in parallel then meet deterministically, while
 * loads that run one after the other wait out the time and never overlap.
 * Fault "fail_device:D[:BYTES]" fails every copy into device D once BYTES
 * (default 0) bytes have landed on it: a GPU that dies in the middle of a
 * load. Device memory is kept out of the process's resident set as real
 * device memory is: after each copy the double drops its view's pages
 * from the page tables (the bytes stay in the device's memfd), so the
 * resident set holds only the copies running at that moment. */
static pthread_mutex_t busy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_cv = PTHREAD_COND_INITIALIZER;
static int busy[MAXDEV], busy_devs, max_busy_devs, rendezvous_done;
static long wait_all_ms;
static long long dev_landed[MAXDEV];

/* gpus_defaults applies the FAKECUDA_* settings of this block. */
static void gpus_defaults(void) {
  const char *e = getenv("FAKECUDA_WAIT_ALL_MS");
  pthread_mutex_lock(&busy_mu);
  wait_all_ms = e ? atol(e) : 0;
  busy_devs = max_busy_devs = rendezvous_done = 0;
  memset(busy, 0, sizeof busy);
  memset(dev_landed, 0, sizeof dev_landed);
  pthread_mutex_unlock(&busy_mu);
}

/* dev_of returns the device whose memory the double's view p is in, or
 * -1 for host memory. */
static int dev_of(const char *p) {
  int d = -1;
  pthread_mutex_lock(&mu);
  for (struct alloc *a = allocs; a && d < 0; a = a->next)
    if (p >= a->rw && p < a->rw + a->mapped) d = a->dev_id;
  pthread_mutex_unlock(&mu);
  return d;
}

/* drop_resident unmaps from the page tables the pages of device memory
 * in [p, p+n) (a view of the double's; host memory is left alone). The
 * memfd keeps the bytes; the next access maps them again. */
static void drop_resident(const char *p, size_t n) {
  if (!p || !n || dev_of(p) < 0) return;
  uintptr_t lo = (uintptr_t)p & ~(PAGE - 1), hi = ((uintptr_t)p + n + PAGE - 1) & ~(PAGE - 1);
  madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* busy_enter marks device d busy (d < 0: nothing) and, under
 * wait_all_ms, waits for every device to be busy at once. */
static void busy_enter(int d) {
  if (d < 0 || d >= MAXDEV) return;
  pthread_mutex_lock(&busy_mu);
  if (busy[d]++ == 0) busy_devs++;
  if (busy_devs > max_busy_devs) max_busy_devs = busy_devs;
  if (max_busy_devs >= ndev) rendezvous_done = 1;
  pthread_cond_broadcast(&busy_cv);
  if (wait_all_ms > 0 && !rendezvous_done) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_all_ms / 1000;
    until.tv_nsec += (wait_all_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    while (!rendezvous_done)
      if (pthread_cond_timedwait(&busy_cv, &busy_mu, &until) == ETIMEDOUT) rendezvous_done = 1;
    pthread_cond_broadcast(&busy_cv);
  }
  pthread_mutex_unlock(&busy_mu);
}

/* busy_leave ends a copy on device d that moved n bytes into it. */
static void busy_leave(int d, size_t landed) {
  if (d < 0 || d >= MAXDEV) return;
  pthread_mutex_lock(&busy_mu);
  if (--busy[d] == 0) busy_devs--;
  dev_landed[d] += (long long)landed;
  pthread_mutex_unlock(&busy_mu);
}

/* dev_failed reports whether fault fail_device:D[:BYTES] fails a copy
 * into device d now. */
static bool dev_failed(int d) {
  char f[64];
  if (d < 0 || d >= MAXDEV) return false;
  pthread_mutex_lock(&mu);
  snprintf(f, sizeof f, "%s", fault);
  pthread_mutex_unlock(&mu);
  if (strncmp(f, "fail_device:", 12) != 0) return false;
  char *end;
  long fd = strtol(f + 12, &end, 10);
  long long after = *end == ':' ? strtoll(end + 1, NULL, 10) : 0;
  if (fd != d) return false;
  pthread_mutex_lock(&busy_mu);
  bool hit = dev_landed[d] >= after;
  pthread_mutex_unlock(&busy_mu);
  return hit;
}

/* gpus_control applies this block's commands; 1 if cmd was one. */
static int gpus_control(const char *cmd) {
  if (strncmp(cmd, "wait_all_ms=", 12) != 0) return 0;
  pthread_mutex_lock(&busy_mu);
  wait_all_ms = atol(cmd + 12);
  pthread_mutex_unlock(&busy_mu);
  return 1;
}

/* gpus_counter answers this block's counters; 1 if name was one. */
static int gpus_counter(const char *name, long long *v) {
  if (strcmp(name, "max_busy_devices") == 0) {
    pthread_mutex_lock(&busy_mu);
    *v = max_busy_devs;
    pthread_mutex_unlock(&busy_mu);
    return 1;
  }
  if (strncmp(name, "landed:", 7) == 0) {
    int d = atoi(name + 7);
    if (d < 0 || d >= MAXDEV) return 0;
    pthread_mutex_lock(&busy_mu);
    *v = dev_landed[d];
    pthread_mutex_unlock(&busy_mu);
    return 1;
  }
  return 0;
}

/* cudaDeviceGetPCIBusId writes device d's PCI address, the one
 * cuDeviceGetAttribute gives ("0000:81:00.0" for device 0). Test trees
 * (fakecuda.Libs.Root) hold sys/bus/pci/devices/ADDRESS/numa_node for it. */
EXPORT int cudaDeviceGetPCIBusId(char *id, int len, int d) {
  init();
  if (!id || len <= 0) return 1;   /* cudaErrorInvalidValue */
  if (d < 0 || d >= ndev) return 101; /* cudaErrorInvalidDevice */
  snprintf(id, (size_t)len, "0000:%02x:00.0", 0x81 + d);
  return 0;
}

/* ------------------------------------------------------------- control */

/* fakecuda_control applies one command: "reset" (back to the settings of
 * the FAKECUDA_* environment, FAKECUDA_FAIL's fault included; the misuse
 * count cleared), "fault=NAME[:ARG]", "fault=" (none), "devices=N",
 * "mode=nvfs|p2pdma|compat", "mem=BYTES", "delay_us=N", and those of
 * the route speeds ("gds_mibps=N", "h2d_mibps=N", "cufile_version=N").
 * It returns 0, or -1 for an unknown command. */
EXPORT int fakecuda_control(const char *cmd) {
  init();
  if (pace_control(cmd) == 0) return 0;
  int rc = 0;
  pthread_mutex_lock(&mu);
  if (strcmp(cmd, "reset") == 0) {
    pthread_mutex_unlock(&mu);
    set_defaults(); /* the FAKECUDA_* environment's settings, fault included */
    pthread_mutex_lock(&mu);
    misuse = 0;
    misuse_what[0] = 0;
    /* Registrations freed with their memory were counted once; keep those
     * of live allocations only. */
    live_bufreg = 0;
    for (struct alloc *a = allocs; a; a = a->next) live_bufreg += a->bufreg;
    while (dmabufs) {
      struct dmabuf *d = dmabufs;
      dmabufs = d->next;
      free(d);
    }
  } else if (strncmp(cmd, "fault=", 6) == 0) {
    snprintf(fault, sizeof fault, "%s", cmd + 6);
  } else if (strncmp(cmd, "devices=", 8) == 0) {
    ndev = atoi(cmd + 8);
    if (ndev > MAXDEV) ndev = MAXDEV;
  } else if (strncmp(cmd, "mode=", 5) == 0) {
    snprintf(mode, sizeof mode, "%s", cmd + 5);
  } else if (strncmp(cmd, "mem=", 4) == 0) {
    devmem = strtoull(cmd + 4, NULL, 10);
  } else if (strncmp(cmd, "delay_us=", 9) == 0) {
    delay_us = atol(cmd + 9);
  } else if (gpus_control(cmd)) {
  } else {
    rc = -1;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

/* fakecuda_counter returns a live count so tests can check that everything
 * taken was given back, or -1 for an unknown name. */
EXPORT long long fakecuda_counter(const char *name) {
  long long v = -1;
  pthread_mutex_lock(&mu);
  if (strcmp(name, "allocs") == 0 || strcmp(name, "cu_allocs") == 0) {
    int drv = name[0] == 'c';
    v = 0;
    for (struct alloc *a = allocs; a; a = a->next) v += a->drv == drv;
  } else if (strcmp(name, "bufreg") == 0) v = live_bufreg;
  else if (strcmp(name, "dmabufs") == 0) {
    v = 0;
    for (struct dmabuf **pp = &dmabufs, *d; (d = *pp);) {
      struct stat st;
      if (fstat(d->fd, &st) == 0 && st.st_dev == d->dev && st.st_ino == d->ino) {
        v++;
        pp = &d->next;
      } else { /* closed (or the number now names another file) */
        *pp = d->next;
        free(d);
      }
    }
  } else if (strcmp(name, "pinned") == 0) v = live_pinned;
  else if (strcmp(name, "streams") == 0) v = live_streams;
  else if (strcmp(name, "events") == 0) v = live_events;
  else if (strcmp(name, "cu_pinned") == 0) v = cu_pinned;
  else if (strcmp(name, "cu_streams") == 0) v = cu_streams;
  else if (strcmp(name, "cu_events") == 0) v = cu_events;
  else if (strcmp(name, "handles") == 0) v = live_handles;
  else if (strcmp(name, "driver_refs") == 0) v = driver_refs;
  else if (strcmp(name, "async_bytes") == 0) v = async_bytes;
  else if (strcmp(name, "cufile_reads") == 0) v = cufile_reads;
  else if (strcmp(name, "cufile_unaligned") == 0) v = cufile_unaligned;
  else if (strcmp(name, "misuse") == 0) v = misuse;
  else if (strcmp(name, "rdma_flushes") == 0) v = rdma_flushes;
  pthread_mutex_unlock(&mu);
  if (v == -1) gpus_counter(name, &v);
  return v;
}

/* fakecuda_misuse returns what the last refused misuse was ("" for none). */
EXPORT const char *fakecuda_misuse(void) { return misuse_what; }

/* --------------------------------------------------------- route speeds */

/* Each route's transfers share one link of a set speed, in MiB/s (0, the
 * default, is unlimited): cuFileRead's (FAKECUDA_GDS_MIBPS, "gds_mibps=N")
 * and host-to-device copies' (FAKECUDA_H2D_MIBPS, "h2d_mibps=N"). A
 * transfer books the link for n bytes at that speed from when it is free,
 * and its caller waits until the booking ends, as a saturated link makes
 * it wait: threads together get the link's speed, not a multiple of it.
 * Tests make one route faster than the other with them. The version
 * cuFileGetVersion reports is set too (FAKECUDA_CUFILE_VERSION,
 * "cufile_version=N"; 1160 by default), to stand for a library upgrade. */
struct pace {
  long mibps;
  struct timespec free_at;
};
static struct pace pace_gds, pace_h2d;
static int cufile_version;

/* pace_defaults applies the FAKECUDA_* settings of this section. */
static void pace_defaults(void) {
  const char *e;
  memset(&pace_gds, 0, sizeof pace_gds);
  memset(&pace_h2d, 0, sizeof pace_h2d);
  cufile_version = 1160;
  if ((e = getenv("FAKECUDA_GDS_MIBPS"))) pace_gds.mibps = atol(e);
  if ((e = getenv("FAKECUDA_H2D_MIBPS"))) pace_h2d.mibps = atol(e);
  if ((e = getenv("FAKECUDA_CUFILE_VERSION"))) cufile_version = atoi(e);
}

/* pace_control applies one command of this section and returns 0, or -1
 * when cmd is none of them. */
static int pace_control(const char *cmd) {
  int rc = 0;
  pthread_mutex_lock(&mu);
  if (strncmp(cmd, "gds_mibps=", 10) == 0) pace_gds.mibps = atol(cmd + 10);
  else if (strncmp(cmd, "h2d_mibps=", 10) == 0) pace_h2d.mibps = atol(cmd + 10);
  else if (strncmp(cmd, "cufile_version=", 15) == 0) cufile_version = atoi(cmd + 15);
  else rc = -1;
  pthread_mutex_unlock(&mu);
  return rc;
}

/* pace books n bytes on link p and waits until the booking ends. */
static void pace(struct pace *p, size_t n) {
  struct timespec now, end;
  pthread_mutex_lock(&mu);
  long mibps = p->mibps;
  if (mibps <= 0 || n == 0) {
    pthread_mutex_unlock(&mu);
    return;
  }
  clock_gettime(CLOCK_MONOTONIC, &now);
  end = p->free_at;
  if (end.tv_sec < now.tv_sec || (end.tv_sec == now.tv_sec && end.tv_nsec < now.tv_nsec)) end = now;
  long long ns = (long long)((double)n * 1e9 / ((double)mibps * 1048576.0));
  ns += end.tv_nsec;
  end.tv_sec += (time_t)(ns / 1000000000LL);
  end.tv_nsec = (long)(ns % 1000000000LL);
  p->free_at = end;
  pthread_mutex_unlock(&mu);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {
  }
}

/* --------------------------------------------------------- CUDA runtime */

enum {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorHostMemoryAlreadyRegistered = 712,
  cudaErrorHostMemoryNotRegistered = 713,
};

EXPORT const char *cudaGetErrorString(int e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle: return "invalid resource handle";
  case cudaErrorNotReady: return "device not ready";
  case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
  case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
  case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
  }
  return "unrecognized error code";
}

/* fault "nodriver": no NVIDIA driver at all, as Debian's libcudart sees it
 * on a machine without one: no device count, and a driver version of 0. */
EXPORT int cudaDriverGetVersion(int *v) {
  init();
  *v = fault_is("nodriver", NULL) ? 0 : 13000;
  return 0;
}
EXPORT int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }

EXPORT int cudaGetDeviceCount(int *n) {
  init();
  *n = 0;
  if (fault_is("init", NULL) || fault_is("nodriver", NULL)) return cudaErrorInsufficientDriver;
  if (ndev <= 0) return cudaErrorNoDevice;
  *n = ndev;
  return 0;
}

EXPORT int cudaSetDevice(int d) {
  init();
  if (ndev <= 0) return cudaErrorNoDevice;
  if (d < 0 || d >= ndev) return cudaErrorInvalidDevice;
  set_current(&primary_ctx[d]); /* as the runtime binds the primary context */
  return 0;
}

EXPORT int cudaMemGetInfo(size_t *freep, size_t *total) {
  init();
  if (ndev <= 0) return cudaErrorNoDevice;
  pthread_mutex_lock(&mu);
  *total = devmem;
  *freep = devmem > used[cur_dev] ? devmem - used[cur_dev] : 0;
  pthread_mutex_unlock(&mu);
  return 0;
}

/* Device addresses come from one reserved range, handed out downwards and
 * back to back, as a CUDA allocator often places them: an allocation's
 * base is the end of the one made after it. Addresses are never handed
 * out twice; a freed range is reserved again. Guarded by mu. */
#define ARENA (1ULL << 40)
static uintptr_t arena_lo, arena_next;

/* dev_map maps the m bytes of fd, PROT_NONE, at the next device address. */
static void *dev_map(int fd, size_t m) {
  pthread_mutex_lock(&mu);
  if (!arena_lo) {
    void *r = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
      pthread_mutex_unlock(&mu);
      return MAP_FAILED;
    }
    arena_lo = (uintptr_t)r;
    arena_next = arena_lo + ARENA;
  }
  if (arena_next - arena_lo < m) {
    pthread_mutex_unlock(&mu);
    return MAP_FAILED;
  }
  arena_next -= m;
  uintptr_t at = arena_next;
  pthread_mutex_unlock(&mu);
  return mmap((void *)at, m, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
}

/* dev_unmap gives a device range back to the reservation. */
static void dev_unmap(void *dev, size_t m) {
  mmap(dev, m, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

/* dev_alloc allocates n bytes of device memory on device dev; drv says
 * the driver API asked (cuMemAlloc), not the runtime. */
static int dev_alloc(void **p, size_t n, int dev, int drv) {
  init();
  *p = NULL;
  if (ndev <= 0) return cudaErrorNoDevice;
  if (n == 0) return 0;
  size_t m = (n + PAGE - 1) & ~(PAGE - 1);
  if (fault_is("oom", NULL)) return cudaErrorMemoryAllocation;
  pthread_mutex_lock(&mu);
  bool oom = used[dev] + m > devmem;
  pthread_mutex_unlock(&mu);
  if (oom) return cudaErrorMemoryAllocation;
  int fd = memfd_create("fakecuda-device", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)m) != 0) {
    if (fd >= 0) close(fd);
    return cudaErrorMemoryAllocation;
  }
  void *d = dev_map(fd, m);
  void *rw = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (d == MAP_FAILED || rw == MAP_FAILED) {
    if (d != MAP_FAILED) dev_unmap(d, m);
    if (rw != MAP_FAILED) munmap(rw, m);
    close(fd);
    return cudaErrorMemoryAllocation;
  }
  struct alloc *a = calloc(1, sizeof *a);
  a->dev = (uintptr_t)d;
  a->rw = rw;
  a->n = n;
  a->mapped = m;
  a->fd = fd;
  a->dev_id = dev;
  a->drv = drv;
  pthread_mutex_lock(&mu);
  a->buffer_id = ++next_buffer_id;
  a->next = allocs;
  allocs = a;
  used[dev] += m;
  pthread_mutex_unlock(&mu);
  *p = d;
  return 0;
}

EXPORT int cudaMalloc(void **p, size_t n) { return dev_alloc(p, n, cur_dev, 0); }

/* Streams: a queue run by the stream's own thread. An op stays at the head
 * of the queue until its copy is done, so pending() sees it. */
enum { OP_COPY, OP_SET, OP_HOSTFN, OP_WAIT32, OP_WRITE32 };
struct op {
  int kind;
  char *dst;       /* OP_WAIT32, OP_WRITE32: the 32-bit word */
  const char *src; /* OP_COPY */
  size_t n;
  int fail, val;   /* val: OP_SET's byte, OP_WAIT32's condition */
  uint32_t value;  /* OP_WAIT32, OP_WRITE32 */
  void (*fn)(void *);
  void *arg;
  unsigned long seq;
  struct op *next;
};

struct stream {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct op *head, *tail;
  unsigned long enq, done;
  int err, stop;
  int refs; /* the stream itself and each event recorded on it; under mu */
  int drv;  /* made through the driver API */
  pthread_t th;
  struct stream *next; /* in streams, while not destroyed; under mu */
};

/* pending reports whether a queued or running copy reads or writes
 * [p, p+n). Caller holds mu (which orders before each stream's mu). */
static bool pending(const char *p, size_t n) {
  for (struct stream *s = streams; s; s = s->next) {
    bool hit = false;
    pthread_mutex_lock(&s->mu);
    for (struct op *o = s->head; o && !hit; o = o->next)
      hit = (o->dst < p + n && p < o->dst + o->n) || (o->src && o->src < p + n && p < o->src + o->n);
    pthread_mutex_unlock(&s->mu);
    if (hit) return true;
  }
  return false;
}

EXPORT int cudaFree(void *p) {
  if (!p) return 0;
  pthread_mutex_lock(&mu);
  struct alloc **pp = &allocs, *a;
  while ((a = *pp) && a->dev != (uintptr_t)p) pp = &a->next;
  if (!a) {
    misused("cudaFree of a pointer cudaMalloc did not return");
    pthread_mutex_unlock(&mu);
    return cudaErrorInvalidValue;
  }
  if (pending(a->rw, a->mapped)) {
    misused("cudaFree of device memory with async copies pending");
    pthread_mutex_unlock(&mu);
    return cudaErrorNotReady;
  }
  /* A registration with cuFile outlives the memory: it stays counted in
   * "bufreg" as the leak it is. */
  *pp = a->next;
  used[a->dev_id] -= a->mapped;
  pthread_mutex_unlock(&mu);
  dev_unmap((void *)a->dev, a->mapped);
  munmap(a->rw, a->mapped);
  close(a->fd);
  free(a);
  return 0;
}

static void add_pinned(void *p, size_t n, int registered, int drv) {
  struct pinned *h = calloc(1, sizeof *h);
  h->p = p;
  h->n = n;
  h->registered = registered;
  h->drv = drv;
  h->next = pinned_list;
  pinned_list = h;
  if (drv) cu_pinned++;
  else live_pinned++;
}

/* take_pinned removes the entry for p made by cudaHostAlloc (registered 0)
 * or cudaHostRegister (1); it fails with -1 when copies still use it. */
static int take_pinned(void *p, int registered, struct pinned **out) {
  *out = NULL;
  pthread_mutex_lock(&mu);
  struct pinned **pp = &pinned_list, *h;
  while ((h = *pp) && (h->p != p || h->registered != registered)) pp = &h->next;
  int rc = 0;
  if (h && pending(h->p, h->n)) {
    misused(registered ? "cudaHostUnregister with async copies pending" : "cudaFreeHost with async copies pending");
    rc = -1;
  } else if (h) {
    *pp = h->next;
    if (h->drv) cu_pinned--;
    else live_pinned--;
    *out = h;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

static int host_alloc(void **p, size_t n, int drv) {
  init();
  *p = NULL;
  if (ndev <= 0) return cudaErrorNoDevice;
  if (fault_is("oom", NULL)) return cudaErrorMemoryAllocation;
  void *m = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
  pthread_mutex_lock(&mu);
  add_pinned(m, n ? n : 1, 0, drv);
  pthread_mutex_unlock(&mu);
  *p = m;
  return 0;
}

EXPORT int cudaHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  return host_alloc(p, n, 0);
}

EXPORT int cudaFreeHost(void *p) {
  struct pinned *h;
  if (take_pinned(p, 0, &h) != 0) return cudaErrorNotReady;
  if (!h) {
    pthread_mutex_lock(&mu);
    misused("cudaFreeHost of a pointer cudaHostAlloc did not return");
    pthread_mutex_unlock(&mu);
    return cudaErrorInvalidValue;
  }
  munmap(h->p, h->n);
  free(h);
  return 0;
}

/* cudaHostRegister refuses memory that overlaps pinned memory already, as
 * CUDA does (cudaErrorHostMemoryAlreadyRegistered). */
static int host_register(void *p, size_t n, int drv) {
  init();
  if (ndev <= 0) return cudaErrorNoDevice;
  if (!p || !n) return cudaErrorInvalidValue;
  pthread_mutex_lock(&mu);
  for (struct pinned *h = pinned_list; h; h = h->next) {
    if ((char *)p < h->p + h->n && h->p < (char *)p + n) {
      pthread_mutex_unlock(&mu);
      return cudaErrorHostMemoryAlreadyRegistered;
    }
  }
  add_pinned(p, n, 1, drv);
  pthread_mutex_unlock(&mu);
  return 0;
}

EXPORT int cudaHostRegister(void *p, size_t n, unsigned flags) {
  (void)flags;
  return host_register(p, n, 0);
}

EXPORT int cudaHostUnregister(void *p) {
  struct pinned *h;
  if (take_pinned(p, 1, &h) != 0) return cudaErrorNotReady;
  if (!h) return cudaErrorHostMemoryNotRegistered;
  free(h);
  return 0;
}

#ifndef FAKECUDA_NO_RDMA_FLUSH
/* cudaDeviceFlushGPUDirectRDMAWrites (CUDA 11.3+): target 0 is the current
 * device; scope 100 the owner, 200 all devices. Built without it
 * (-DFAKECUDA_NO_RDMA_FLUSH) the double stands for an older libcudart. */
EXPORT int cudaDeviceFlushGPUDirectRDMAWrites(int target, int scope) {
  init();
  if (ndev <= 0) return cudaErrorNoDevice;
  if (target != 0 || (scope != 100 && scope != 200)) return cudaErrorInvalidValue;
  if (fault_is("rdma_flush", NULL)) return cudaErrorIllegalAddress;
  pthread_mutex_lock(&mu);
  rdma_flushes++;
  pthread_mutex_unlock(&mu);
  return 0;
}
#endif

/* wait32_met reports whether word meets a cuStreamWaitValue32 condition:
 * 0 GEQ (cyclic), 1 EQ, 2 AND, 3 NOR. */
static bool wait32_met(const char *word, uint32_t v, int cond) {
  uint32_t w = __atomic_load_n((const uint32_t *)word, __ATOMIC_ACQUIRE);
  switch (cond & 3) {
  case 0: return (int32_t)(w - v) >= 0;
  case 1: return w == v;
  case 2: return (w & v) != 0;
  default: return ~(w | v) != 0;
  }
}

/* run_op does one stream operation (on s's thread, or the caller's for
 * the null stream, s NULL). A wait ends early when its stream stops. */
static void run_op(struct op *o, struct stream *s) {
  switch (o->kind) {
  case OP_COPY: memcpy(o->dst, o->src, o->n); break;
  case OP_SET: memset(o->dst, o->val, o->n); break;
  case OP_HOSTFN: o->fn(o->arg); break;
  case OP_WRITE32: __atomic_store_n((uint32_t *)o->dst, o->value, __ATOMIC_RELEASE); break;
  case OP_WAIT32:
    while (!wait32_met(o->dst, o->value, o->val)) {
      if (s) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
      }
      usleep(20);
    }
    break;
  }
}

/* op_device is the device a copy or memset op touches, -1 for none. */
static int op_device(const struct op *o) {
  if (o->kind != OP_COPY && o->kind != OP_SET) return -1;
  int d = dev_of(o->dst);
  return d >= 0 || !o->src ? d : dev_of(o->src);
}

/* op_done ends op o on device dv: the device's pages leave the resident
 * set (see "many devices"). */
static void op_done(const struct op *o, int dv) {
  if (dv < 0) return;
  drop_resident(o->dst, o->n);
  if (o->src) drop_resident(o->src, o->n);
  busy_leave(dv, !o->fail && dev_of(o->dst) == dv ? o->n : 0);
}

static void *stream_main(void *arg) {
  struct stream *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head) break;
    struct op *o = s->head;
    pthread_mutex_unlock(&s->mu);
    if (delay_us > 0) usleep((useconds_t)delay_us);
    int dv = op_device(o);
    busy_enter(dv);
    if (!o->fail && dev_failed(dv)) o->fail = 1;
    if (!o->fail) run_op(o, s);
    op_done(o, dv);
    pthread_mutex_lock(&s->mu);
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    if (o->fail && !s->err) s->err = cudaErrorIllegalAddress;
    s->done = o->seq;
    pthread_cond_broadcast(&s->cv);
    free(o);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* stream_release drops one reference; the last frees the stream. */
static void stream_release(struct stream *s) {
  pthread_mutex_lock(&mu);
  int left = --s->refs;
  pthread_mutex_unlock(&mu);
  if (left > 0) return;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

static int stream_create(void **out, int drv) {
  init();
  if (ndev <= 0) return cudaErrorNoDevice;
  struct stream *s = calloc(1, sizeof *s);
  s->drv = drv;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->refs = 1;
  if (pthread_create(&s->th, NULL, stream_main, s) != 0) {
    free(s);
    return cudaErrorMemoryAllocation;
  }
  pthread_mutex_lock(&mu);
  s->next = streams;
  streams = s;
  if (drv) cu_streams++;
  else live_streams++;
  pthread_mutex_unlock(&mu);
  *out = s;
  return 0;
}

EXPORT int cudaStreamCreateWithFlags(void **out, unsigned flags) {
  (void)flags;
  return stream_create(out, 0);
}

static int stream_wait(struct stream *s, unsigned long seq) {
  pthread_mutex_lock(&s->mu);
  while (s->done < seq) pthread_cond_wait(&s->cv, &s->mu);
  int e = s->err;
  pthread_mutex_unlock(&s->mu);
  return e;
}

/* live_stream reports whether s is a stream not yet destroyed. */
static int enqueue(void *sp, char *d, const char *s, size_t n, int val);
static int enqueue_op(void *sp, const struct op *t);

static bool live_stream(struct stream *s) {
  pthread_mutex_lock(&mu);
  struct stream *x = streams;
  while (x && x != s) x = x->next;
  pthread_mutex_unlock(&mu);
  return x != NULL;
}

EXPORT int cudaStreamSynchronize(void *sp) {
  struct stream *s = sp;
  if (!s) return 0;
  if (!live_stream(s)) return cudaErrorInvalidResourceHandle;
  pthread_mutex_lock(&s->mu);
  unsigned long seq = s->enq;
  pthread_mutex_unlock(&s->mu);
  return stream_wait(s, seq);
}

/* cudaStreamDestroy refuses a stream with copies still pending: whoever
 * destroys it must have waited for them, or the buffers they use may be
 * freed under them. */
EXPORT int cudaStreamDestroy(void *sp) {
  struct stream *s = sp;
  if (!s) return cudaErrorInvalidResourceHandle;
  pthread_mutex_lock(&mu);
  struct stream **pp = &streams;
  while (*pp && *pp != s) pp = &(*pp)->next;
  if (!*pp) {
    misused("cudaStreamDestroy of a stream that does not exist (destroyed twice?)");
    pthread_mutex_unlock(&mu);
    return cudaErrorInvalidResourceHandle;
  }
  pthread_mutex_lock(&s->mu);
  bool busy = s->done < s->enq;
  pthread_mutex_unlock(&s->mu);
  if (busy) {
    misused("cudaStreamDestroy with async copies pending");
    pthread_mutex_unlock(&mu);
    return cudaErrorNotReady;
  }
  *pp = s->next;
  if (s->drv) cu_streams--;
  else live_streams--;
  pthread_mutex_unlock(&mu);
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->th, NULL);
  stream_release(s);
  return 0;
}

/* resolve maps (dst, src) of a copy of kind to the double's views; a
 * host-to-device copy first waits for its link (route speeds). */
static int resolve(void *dst, const void *src, size_t n, int kind, char **d, const char **s) {
  if (kind == 1) {
    *d = rw_of((uintptr_t)dst, n);
    *s = src;
  } else if (kind == 2) {
    *d = dst;
    *s = rw_of((uintptr_t)src, n);
  } else {
    return cudaErrorInvalidValue;
  }
  if (!*d || !*s) return cudaErrorInvalidValue;
  if (kind == 1) pace(&pace_h2d, n);
  return 0;
}

EXPORT int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
  char *d;
  const char *s;
  int e = resolve(dst, src, n, kind, &d, &s);
  if (e) return e;
  struct op o = {.kind = OP_COPY, .dst = d, .src = s, .n = n};
  int dv = op_device(&o);
  busy_enter(dv);
  o.fail = dev_failed(dv);
  if (!o.fail) memcpy(d, s, n);
  op_done(&o, dv);
  return o.fail ? cudaErrorIllegalAddress : 0;
}

EXPORT int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *sp) {
  char *d;
  const char *s;
  int e = resolve(dst, src, n, kind, &d, &s);
  if (e) return e;
  return enqueue(sp, d, s, n, 0);
}

/* enqueue queues a copy of n bytes from s to d (s NULL: a memset of d to
 * val) on stream sp, or does it now for the null stream. */
static int enqueue(void *sp, char *d, const char *s, size_t n, int val) {
  struct op o = {.kind = s ? OP_COPY : OP_SET, .dst = d, .src = s, .n = n, .val = val};
  return enqueue_op(sp, &o);
}

/* enqueue_op queues a copy of t on stream sp, or does it now for the
 * null stream. */
static int enqueue_op(void *sp, const struct op *t) {
  struct stream *st = sp;
  size_t n = t->n;
  if (!st) {
    int dv = op_device(t);
    busy_enter(dv);
    int failed = dev_failed(dv);
    if (!failed) run_op((struct op *)t, NULL);
    op_done(t, dv);
    return failed ? cudaErrorIllegalAddress : 0;
  }
  if (!live_stream(st)) return cudaErrorInvalidResourceHandle;
  struct op *o = calloc(1, sizeof *o);
  *o = *t;
  o->next = NULL;
  o->fail = (o->kind == OP_COPY || o->kind == OP_SET) && fault_is("copy", NULL);
  pthread_mutex_lock(&st->mu);
  if (st->err) {
    pthread_mutex_unlock(&st->mu);
    free(o);
    return st->err; /* sticky, like a real context error */
  }
  o->seq = ++st->enq;
  if (st->tail) st->tail->next = o;
  else st->head = o;
  st->tail = o;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
  pthread_mutex_lock(&mu);
  async_bytes += (long long)n;
  pthread_mutex_unlock(&mu);
  return 0;
}

/* An event holds a reference to the stream it was last recorded on, so it
 * stays usable after that stream is destroyed. */
struct event {
  struct stream *s;
  unsigned long seq;
  unsigned flags;       /* 2: CU_EVENT_DISABLE_TIMING */
  int drv, recorded;    /* made through the driver API; recorded once */
  struct timespec when; /* when it was last recorded */
};

static int event_create(void **out, unsigned flags, int drv) {
  struct event *e = calloc(1, sizeof(struct event));
  e->flags = flags;
  e->drv = drv;
  pthread_mutex_lock(&mu);
  if (drv) cu_events++;
  else live_events++;
  pthread_mutex_unlock(&mu);
  *out = e;
  return 0;
}

EXPORT int cudaEventCreateWithFlags(void **out, unsigned flags) { return event_create(out, flags, 0); }

EXPORT int cudaEventRecord(void *ev, void *sp) {
  struct event *e = ev;
  struct stream *s = sp;
  if (!e) return cudaErrorInvalidResourceHandle;
  if (s && !live_stream(s)) return cudaErrorInvalidResourceHandle;
  if (s) {
    pthread_mutex_lock(&mu);
    s->refs++;
    pthread_mutex_unlock(&mu);
  }
  if (e->s) stream_release(e->s);
  e->s = s;
  e->seq = 0;
  e->recorded = 1;
  clock_gettime(CLOCK_MONOTONIC, &e->when);
  if (s) {
    pthread_mutex_lock(&s->mu);
    e->seq = s->enq;
    pthread_mutex_unlock(&s->mu);
  }
  return 0;
}

EXPORT int cudaEventQuery(void *ev) {
  struct event *e = ev;
  if (!e) return cudaErrorInvalidResourceHandle;
  if (!e->s) return 0;
  pthread_mutex_lock(&e->s->mu);
  int r = e->s->done >= e->seq ? e->s->err : cudaErrorNotReady;
  pthread_mutex_unlock(&e->s->mu);
  return r;
}

EXPORT int cudaEventSynchronize(void *ev) {
  struct event *e = ev;
  if (!e) return cudaErrorInvalidResourceHandle;
  if (!e->s) return 0;
  return stream_wait(e->s, e->seq);
}

EXPORT int cudaEventDestroy(void *ev) {
  struct event *e = ev;
  if (!e) return cudaErrorInvalidResourceHandle;
  if (e->s) stream_release(e->s);
  pthread_mutex_lock(&mu);
  if (e->drv) cu_events--;
  else live_events--;
  pthread_mutex_unlock(&mu);
  free(e);
  return 0;
}

/* ---------------------------------------------------------------- cuFile */

typedef struct {
  int err, cu_err;
} CUfileError_t;

typedef struct {
  struct {
    unsigned major_version, minor_version;
    size_t poll_thresh_size, max_direct_io_size;
    unsigned dstatusflags, dcontrolflags;
  } nvfs;
  unsigned fflags, max_device_cache_size, per_buffer_cache_size;
  unsigned max_device_pinned_mem_size, max_batch_io_size, max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

typedef struct {
  int type;
  union {
    int fd;
    void *handle;
  } handle;
  const void *fs_ops;
} CUfileDescr_t;

static CUfileError_t cf(int err, int cu) {
  CUfileError_t e = {err, cu};
  return e;
}

static bool driver_open(void) {
  pthread_mutex_lock(&mu);
  bool o = driver_refs > 0;
  pthread_mutex_unlock(&mu);
  return o;
}

/* nocuda does what Debian's libcufile 1.4 does without libcuda.so.1. */
static CUfileError_t nocuda(void) {
  static const char *lines[] = {"dlopen error libcuda.so.1: cannot open shared object file: No such file or directory",
                                " missing cuda symbols while dynamic loading", " cuFile initialization failed"};
  const char *path = getenv("CUFILE_LOGFILE_PATH");
  FILE *log = fopen(path && *path ? path : "cufile.log", "a");
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    printf("%s\n", lines[i]);
    if (log) fprintf(log, " [pid=%d] ERROR %s\n", (int)getpid(), lines[i]);
  }
  if (log) fclose(log);
  return cf(5033, 0); /* CU_FILE_NVFS_SETUP_ERROR */
}

EXPORT CUfileError_t cuFileDriverOpen(void) {
  init();
  if (fault_is("nocuda", NULL)) return nocuda();
  if (fault_is("driver_open", NULL)) return cf(5001, 0);
  if (ndev <= 0) return cf(5011, 100); /* CUDA_ERROR_NO_DEVICE */
  pthread_mutex_lock(&mu);
  driver_refs++;
  pthread_mutex_unlock(&mu);
  return cf(0, 0);
}

EXPORT CUfileError_t cuFileDriverClose_v2(void) {
  pthread_mutex_lock(&mu);
  int ok = driver_refs > 0;
  if (ok) driver_refs--;
  pthread_mutex_unlock(&mu);
  return ok ? cf(0, 0) : cf(5001, 0);
}

EXPORT CUfileError_t cuFileDriverClose(void) { return cuFileDriverClose_v2(); }

#ifndef FAKECUDA_NO_GET_VERSION
/* Built with -DFAKECUDA_NO_GET_VERSION the double stands for cuFile 1.4,
 * which lacks cuFileGetVersion. */
EXPORT CUfileError_t cuFileGetVersion(int *v) {
  init();
  pthread_mutex_lock(&mu);
  *v = cufile_version;
  pthread_mutex_unlock(&mu);
  return cf(0, 0);
}
#endif

/* cuFileDriverGetProperties answers with the driver closed too: NVIDIA's
 * libcufile opens it again implicitly for this call. */
EXPORT CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *p) {
  init();
  memset(p, 0, sizeof *p);
  pthread_mutex_lock(&mu);
  if (strcmp(mode, "nvfs") == 0) {
    p->nvfs.major_version = 2;
    p->nvfs.minor_version = 26;
  }
  p->nvfs.dstatusflags = 1u << 4; /* NVMe */
  p->nvfs.dcontrolflags = 1u << 1; /* allow compat */
  p->nvfs.max_direct_io_size = 16384;
  p->max_device_pinned_mem_size = 33554432; /* KiB: 32 GiB */
  p->max_batch_io_size = 128;
  pthread_mutex_unlock(&mu);
  return cf(0, 0);
}

/* cuFileGetParameterBool: 1 ALLOW_COMPAT_MODE, 2 FORCE_COMPAT_MODE,
 * 7 USE_PCIP2PDMA. */
EXPORT CUfileError_t cuFileGetParameterBool(int param, bool *v) {
  init();
  pthread_mutex_lock(&mu);
  CUfileError_t r = cf(0, 0);
  switch (param) {
  case 1: *v = true; break;
  case 2: *v = strcmp(mode, "compat") == 0; break;
  case 7: *v = strcmp(mode, "p2pdma") == 0; break;
  default: *v = false;
  }
  pthread_mutex_unlock(&mu);
  return r;
}

EXPORT CUfileError_t cuFileDriverGetP2PFlags(int status_flag, int *flags) {
  (void)status_flag;
  if (!driver_open()) return cf(5001, 0);
  pthread_mutex_lock(&mu);
  *flags = strcmp(mode, "p2pdma") == 0 ? 1 : strcmp(mode, "nvfs") == 0 ? 2 : 0;
  pthread_mutex_unlock(&mu);
  return cf(0, 0);
}

EXPORT CUfileError_t cuFileHandleRegister(void **out, CUfileDescr_t *d) {
  if (!driver_open()) return cf(5001, 0);
  if (!d || d->type != 1) return cf(5022, 0);
  int fl = fcntl(d->handle.fd, F_GETFL);
  if (fl < 0) return cf(5022, 0);
  pthread_mutex_lock(&mu);
  bool compat = strcmp(mode, "compat") == 0;
  pthread_mutex_unlock(&mu);
  if (!(fl & O_DIRECT) && !compat) return cf(5020, 0); /* CU_FILE_DIO_NOT_SET */
  struct stat st;
  if (fstat(d->handle.fd, &st) != 0) return cf(5022, 0);
  if (fault_is("handle_register", NULL)) return cf(5030, 0); /* CU_FILE_INTERNAL_ERROR */
  struct fh *h = calloc(1, sizeof *h);
  h->fd = d->handle.fd;
  h->dev = st.st_dev;
  h->ino = st.st_ino;
  pthread_mutex_lock(&mu);
  h->next = handles;
  handles = h;
  live_handles++;
  pthread_mutex_unlock(&mu);
  *out = h;
  return cf(0, 0);
}

/* handle_fd returns the descriptor of a registered handle, or -1 for a
 * handle deregistered or never registered. */
static int handle_fd(void *h) {
  int fd = -1;
  pthread_mutex_lock(&mu);
  for (struct fh *x = handles; x; x = x->next)
    if (x == h) fd = x->fd;
  pthread_mutex_unlock(&mu);
  return fd;
}

EXPORT void cuFileHandleDeregister(void *h) {
  pthread_mutex_lock(&mu);
  struct fh **pp = &handles, *x;
  while ((x = *pp) && x != h) pp = &x->next;
  if (x) {
    struct stat st;
    if (fstat(x->fd, &st) != 0 || st.st_dev != x->dev || st.st_ino != x->ino)
      misused("cuFileHandleDeregister after its file descriptor was closed");
    *pp = x->next;
    live_handles--;
    free(x);
  } else {
    misused("cuFileHandleDeregister of a handle not registered (deregistered twice?)");
  }
  pthread_mutex_unlock(&mu);
}

/* bufreg_check finds the allocation of a buffer (de)registration: the
 * allocation must exist and belong to the calling thread's device. */
static CUfileError_t bufreg_check(const void *p, size_t n, struct alloc **out) {
  *out = find((uintptr_t)p, n);
  if (!*out) return cf(5012, 0); /* CU_FILE_CUDA_POINTER_INVALID */
  if ((*out)->dev_id != cur_dev) return cf(5015, 0); /* CU_FILE_CUDA_CONTEXT_MISMATCH */
  return cf(0, 0);
}

EXPORT CUfileError_t cuFileBufRegister(const void *p, size_t n, int flags) {
  (void)flags;
  if (!driver_open()) return cf(5001, 0);
  pthread_mutex_lock(&mu);
  struct alloc *a;
  CUfileError_t r = bufreg_check(p, n, &a);
  if (r.err == 0 && a->bufreg) r = cf(5023, 0); /* CU_FILE_MEMORY_ALREADY_REGISTERED */
  if (r.err == 0) {
    a->bufreg = 1;
    live_bufreg++;
  }
  pthread_mutex_unlock(&mu);
  return r;
}

EXPORT CUfileError_t cuFileBufDeregister(const void *p) {
  pthread_mutex_lock(&mu);
  struct alloc *a;
  CUfileError_t r = bufreg_check(p, 0, &a);
  if (r.err == 0 && !a->bufreg) r = cf(5024, 0); /* CU_FILE_MEMORY_NOT_REGISTERED */
  if (r.err == 0) {
    a->bufreg = 0;
    live_bufreg--;
  }
  pthread_mutex_unlock(&mu);
  return r;
}

/* pread_full reads until n bytes or end of file; it returns the count or -1. */
static ssize_t pread_full(int fd, char *p, size_t n, off_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, p + got, n - got, off + (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* io_target checks a cuFileRead or cuFileWrite as cuFile does: an open
 * driver, a registered handle, base inside an allocation of the calling
 * thread's device and [base+boff, base+boff+size) inside that allocation.
 * It returns 0 and the descriptor and the double's view of the bytes, or
 * the negative CUfileOpError to return. */
static ssize_t io_target(void *h, const void *base, size_t size, off_t boff, int *fd, char **rw) {
  if (!driver_open()) return -5001;
  if ((*fd = handle_fd(h)) < 0) {
    pthread_mutex_lock(&mu);
    misused("cuFileRead or cuFileWrite with a handle not registered (deregistered?)");
    pthread_mutex_unlock(&mu);
    return -5027; /* CU_FILE_HANDLE_NOT_REGISTERED */
  }
  uintptr_t at = (uintptr_t)base + (uintptr_t)boff;
  pthread_mutex_lock(&mu);
  struct alloc *a = find((uintptr_t)base, 0);
  bool inside = a && boff >= 0 && at >= a->dev && at - a->dev <= a->n && size <= a->n - (at - a->dev);
  bool mismatch = a && a->dev_id != cur_dev;
  pthread_mutex_unlock(&mu);
  if (!a) return -5012;        /* CU_FILE_CUDA_POINTER_INVALID */
  if (!inside) return -5014;   /* CU_FILE_CUDA_POINTER_RANGE_ERROR */
  if (mismatch) return -5015;  /* CU_FILE_CUDA_CONTEXT_MISMATCH: not this thread's device */
  *rw = a->rw + (at - a->dev);
  return 0;
}

static ssize_t cufile_read(void *h, void *base, size_t size, off_t foff, off_t boff) {
  long long at;
  int fd;
  char *rw;
  ssize_t bad = io_target(h, base, size, boff, &fd, &rw);
  if (bad) return bad;
  if (fault_is("read_at", &at) && at >= foff && at < foff + (off_t)size) {
    errno = EIO;
    return -1;
  }
  if (fault_is("cufile_io", NULL)) return -5044;
  if (fault_is("short_read", NULL) && size > PAGE) size = (size / 2) & ~(PAGE - 1);
  bool aligned = foff % PAGE == 0 && ((uintptr_t)base + (uintptr_t)boff) % PAGE == 0;
  pthread_mutex_lock(&mu);
  cufile_reads++;
  if (!aligned) cufile_unaligned++;
  pthread_mutex_unlock(&mu);
  pace(&pace_gds, size);
  if (aligned && size % PAGE == 0) return pread_full(fd, rw, size, foff);
  /* Unaligned: bounce through an aligned buffer, as cuFile does. */
  off_t a0 = foff & ~(off_t)(PAGE - 1);
  size_t span = ((size_t)(foff - a0) + size + PAGE - 1) & ~(PAGE - 1);
  void *tmp;
  if (posix_memalign(&tmp, PAGE, span) != 0) return -5043;
  ssize_t got = pread_full(fd, tmp, span, a0);
  ssize_t r = -1;
  if (got >= 0) {
    ssize_t avail = got - (ssize_t)(foff - a0);
    r = avail <= 0 ? 0 : avail < (ssize_t)size ? avail : (ssize_t)size;
    memcpy(rw, (char *)tmp + (foff - a0), (size_t)r);
  }
  int saved = errno;
  free(tmp);
  errno = saved;
  return r;
}

/* cuFileWrite supports aligned writes only (what gdsload issues). */
static ssize_t cufile_write(void *h, const void *base, size_t size, off_t foff, off_t boff) {
  int fd;
  char *rw;
  ssize_t bad = io_target(h, base, size, boff, &fd, &rw);
  if (bad) return bad;
  if (fault_is("cufile_io", NULL)) return -5044;
  if (foff % PAGE || size % PAGE || (uintptr_t)rw % PAGE) {
    errno = EINVAL;
    return -1;
  }
  size_t put = 0;
  while (put < size) {
    ssize_t r = pwrite(fd, rw + put, size - put, foff + (off_t)put);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    put += (size_t)r;
  }
  return (ssize_t)put;
}

/* cufile_io runs a cuFileRead (read 1) or cuFileWrite as a copy of the
 * device it touches (see "many devices"). */
static ssize_t cufile_io(int read, void *h, void *base, size_t size, off_t foff, off_t boff) {
  char *rw = rw_of((uintptr_t)base + (uintptr_t)boff, size);
  int dv = rw ? dev_of(rw) : -1;
  busy_enter(dv);
  ssize_t r;
  if (read && dev_failed(dv)) r = -5044; /* CU_FILE_IO_ERROR */
  else r = read ? cufile_read(h, base, size, foff, boff) : cufile_write(h, base, size, foff, boff);
  if (rw) drop_resident(rw, size);
  busy_leave(dv, read && r > 0 ? (size_t)r : 0);
  return r;
}

EXPORT ssize_t cuFileRead(void *h, void *base, size_t size, off_t foff, off_t boff) {
  return cufile_io(1, h, base, size, foff, boff);
}

EXPORT ssize_t cuFileWrite(void *h, const void *base, size_t size, off_t foff, off_t boff) {
  return cufile_io(0, h, (void *)base, size, foff, boff);
}

/* ---------------------------------------------------- CUDA driver (libcuda) */

/* The driver API half serves NVIDIA's real libcufile, which dlopens
 * libcuda.so.1 (the double's soname) and looks its entry points up by
 * name. It works on the same state as the runtime half: device memory
 * from cuMemAlloc and cudaMalloc is one list, a stream or an event is the
 * same object under both APIs, and the current context follows
 * cudaSetDevice as the runtime's does. What it holds is counted apart
 * (cu_allocs, cu_pinned, cu_streams, cu_events): libcufile keeps its
 * bounce buffers and streams until the process exits. */

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
};

static FILE *trace_file;
static void trace_open(void) {
  const char *p = getenv("FAKECUDA_TRACE");
  if (p && *p) trace_file = fopen(p, "a");
}

/* trace appends one line per driver call to $FAKECUDA_TRACE when set:
 * what the real libcufile calls, in which order, and what it got back. */
static int trace(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int trace(int rc, const char *fmt, ...) {
  static pthread_once_t topen = PTHREAD_ONCE_INIT;
  pthread_once(&topen, trace_open);
  if (!trace_file) return rc;
  va_list ap;
  va_start(ap, fmt);
  flockfile(trace_file);
  fprintf(trace_file, "[%ld] ", (long)gettid());
  vfprintf(trace_file, fmt, ap);
  fprintf(trace_file, " = %d\n", rc);
  fflush(trace_file);
  funlockfile(trace_file);
  va_end(ap);
  return rc;
}

EXPORT int cuInit(unsigned flags) {
  init();
  return trace(flags ? CUDA_ERROR_INVALID_VALUE : ndev <= 0 ? CUDA_ERROR_NO_DEVICE : 0, "cuInit(%u)", flags);
}

EXPORT int cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return trace(0, "cuDriverGetVersion(%d)", *v);
}

static const char *const error_names[][2] = {
    {"CUDA_SUCCESS", "no error"},
    {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {"CUDA_ERROR_NOT_READY", "device not ready"},
    {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};
static const int error_codes[] = {0, 1, 2, 100, 101, 201, 400, 500, 600, 700, 712, 713, 801};

static int error_index(int e) {
  for (size_t i = 0; i < sizeof error_codes / sizeof error_codes[0]; i++)
    if (error_codes[i] == e) return (int)i;
  return -1;
}

/* cuGetErrorString and cuGetErrorName answer CUDA_ERROR_INVALID_VALUE,
 * and NULL, for a code they do not know, as the real ones do. */
EXPORT int cuGetErrorString(int e, const char **s) {
  int i = error_index(e);
  *s = i < 0 ? NULL : error_names[i][1];
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : 0;
}

EXPORT int cuGetErrorName(int e, const char **s) {
  int i = error_index(e);
  *s = i < 0 ? NULL : error_names[i][0];
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : 0;
}


static bool valid_ctx(struct ctx *c) {
  if (!c) return false;
  if (c >= primary_ctx && c < primary_ctx + MAXDEV) return c->dev < ndev;
  return c->live;
}

static bool valid_dev(int d) { return d >= 0 && d < ndev; }

EXPORT int cuDeviceGetCount(int *n) {
  init();
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = ndev > 0 ? ndev : 0;
  return trace(0, "cuDeviceGetCount(%d)", *n);
}

EXPORT int cuDeviceGet(int *d, int ordinal) {
  init();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(ordinal)) return trace(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet(%d)", ordinal);
  *d = ordinal;
  return trace(0, "cuDeviceGet(%d)", ordinal);
}

EXPORT int cuDeviceGetName(char *name, int len, int d) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "fakecuda GPU %d", d);
  return trace(0, "cuDeviceGetName(%d)", d);
}

EXPORT int cuDeviceGetUuid_v2(unsigned char *uuid, int d) {
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
  memcpy(uuid, "fakecuda-uuid-\0\0", 16);
  uuid[15] = (unsigned char)d;
  return trace(0, "cuDeviceGetUuid_v2(%d)", d);
}

/* The PCI address of device d: 0000:(0x81+d):00.0, a bus with no device
 * in sysfs, so libcufile finds no PCI topology to place it in. */
#define PCI_BUS(d) (0x81 + (d))

EXPORT int cuDeviceGetAttribute(int *v, int attr, int d) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
  case 1: *v = 1024; break;         /* MAX_THREADS_PER_BLOCK */
  case 16: *v = 132; break;         /* MULTIPROCESSOR_COUNT */
  case 18: *v = 0; break;           /* INTEGRATED */
  case 19: *v = 1; break;           /* CAN_MAP_HOST_MEMORY */
  case 33: *v = PCI_BUS(d); break;  /* PCI_BUS_ID */
  case 34: *v = 0; break;           /* PCI_DEVICE_ID */
  case 41: *v = 1; break;           /* UNIFIED_ADDRESSING */
  case 50: *v = 0; break;           /* PCI_DOMAIN_ID */
  case 75: *v = 9; break;           /* COMPUTE_CAPABILITY_MAJOR */
  case 76: *v = 0; break;           /* COMPUTE_CAPABILITY_MINOR */
  case 83: *v = 1; break;           /* MANAGED_MEMORY */
  case 91: *v = 1; break;           /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
  case 116: *v = 1; break;          /* GPU_DIRECT_RDMA_SUPPORTED */
  case 124: *v = 1; break;          /* DMA_BUF_SUPPORTED */
  default: *v = 0;
  }
  return trace(0, "cuDeviceGetAttribute(attr %d, dev %d) -> %d", attr, d, *v);
}

EXPORT int cuDeviceCanAccessPeer(int *can, int d, int peer) {
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(d) || !valid_dev(peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can = d != peer;
  return trace(0, "cuDeviceCanAccessPeer(%d, %d) -> %d", d, peer, *can);
}

EXPORT int cuDevicePrimaryCtxRetain(void **out, int d) {
  init();
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(d)) return trace(CUDA_ERROR_INVALID_DEVICE, "cuDevicePrimaryCtxRetain(%d)", d);
  pthread_mutex_lock(&mu);
  primary_ctx[d].dev = d;
  primary_ctx[d].primary = 1;
  primary_ctx[d].refs++;
  pthread_mutex_unlock(&mu);
  *out = &primary_ctx[d];
  return trace(0, "cuDevicePrimaryCtxRetain(%d) -> %p", d, *out);
}

EXPORT int cuDevicePrimaryCtxRelease(int d) {
  if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  int rc = primary_ctx[d].refs > 0 ? 0 : CUDA_ERROR_INVALID_CONTEXT;
  if (!rc) primary_ctx[d].refs--;
  pthread_mutex_unlock(&mu);
  return trace(rc, "cuDevicePrimaryCtxRelease(%d)", d);
}

EXPORT int cuCtxCreate_v2(void **out, unsigned flags, int d) {
  init();
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
  struct ctx *c = calloc(1, sizeof *c);
  c->dev = d;
  c->live = 1;
  c->refs = 1;
  if (ctx_depth < CTXDEPTH) ctx_stack[ctx_depth++] = c;
  cur_dev = d;
  *out = c;
  return trace(0, "cuCtxCreate_v2(flags %u, dev %d) -> %p", flags, d, *out);
}

/* cuCtxDestroy_v2 marks a created context dead (never freed, so a stale
 * pointer stays recognisably invalid) and unbinds it from this thread. */
EXPORT int cuCtxDestroy_v2(void *cp) {
  struct ctx *c = cp;
  if (!valid_ctx(c) || c->primary) return trace(CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy_v2(%p)", cp);
  c->live = 0;
  if (current() == c) set_current(NULL);
  return trace(0, "cuCtxDestroy_v2(%p)", cp);
}

EXPORT int cuCtxGetCurrent(void **out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = current();
  return trace(0, "cuCtxGetCurrent() -> %p", *out);
}

EXPORT int cuCtxSetCurrent(void *cp) {
  if (cp && !valid_ctx(cp)) return trace(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent(%p)", cp);
  set_current(cp);
  return trace(0, "cuCtxSetCurrent(%p)", cp);
}

EXPORT int cuCtxPushCurrent_v2(void *cp) {
  if (!valid_ctx(cp) || ctx_depth >= CTXDEPTH) return trace(CUDA_ERROR_INVALID_VALUE, "cuCtxPushCurrent_v2(%p)", cp);
  ctx_stack[ctx_depth++] = cp;
  cur_dev = ((struct ctx *)cp)->dev;
  return trace(0, "cuCtxPushCurrent_v2(%p)", cp);
}

EXPORT int cuCtxPopCurrent_v2(void **out) {
  if (!ctx_depth) return trace(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPopCurrent_v2()");
  struct ctx *c = ctx_stack[--ctx_depth];
  if (out) *out = c;
  if (current()) cur_dev = current()->dev;
  return trace(0, "cuCtxPopCurrent_v2() -> %p", (void *)c);
}

EXPORT int cuCtxGetDevice(int *d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  struct ctx *c = current();
  if (!c) return trace(CUDA_ERROR_INVALID_CONTEXT, "cuCtxGetDevice()");
  *d = c->dev;
  return trace(0, "cuCtxGetDevice() -> %d", *d);
}

EXPORT int cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  if (!current()) return trace(CUDA_ERROR_INVALID_CONTEXT, "cuCtxGetStreamPriorityRange()");
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return trace(0, "cuCtxGetStreamPriorityRange()");
}

EXPORT int cuCtxEnablePeerAccess(void *cp, unsigned flags) {
  if (!current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!valid_ctx(cp) || flags) return CUDA_ERROR_INVALID_VALUE;
  return trace(0, "cuCtxEnablePeerAccess(%p)", cp);
}

/* need_ctx is what the driver answers a call that needs a current
 * context on a thread without one. */
#define NEED_CTX(name)                                                                                      \
  do {                                                                                                      \
    if (!current()) return trace(CUDA_ERROR_INVALID_CONTEXT, "%s without a current context", name);        \
  } while (0)

/* Memory. */

EXPORT int cuMemAlloc_v2(unsigned long long *p, size_t n) {
  NEED_CTX("cuMemAlloc_v2");
  if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
  void *d;
  int rc = dev_alloc(&d, n, current()->dev, 1);
  *p = (uintptr_t)d;
  return trace(rc, "cuMemAlloc_v2(%zu) -> %#llx", n, *p);
}

EXPORT int cuMemFree_v2(unsigned long long p) { return trace(cudaFree((void *)(uintptr_t)p), "cuMemFree_v2(%#llx)", p); }

/* cuMemAllocManaged is refused: unified memory lies outside the double. */
EXPORT int cuMemAllocManaged(unsigned long long *p, size_t n, unsigned flags) {
  (void)p;
  return trace(CUDA_ERROR_NOT_SUPPORTED, "cuMemAllocManaged(%zu, %u)", n, flags);
}

EXPORT int cuMemAllocHost_v2(void **p, size_t n) {
  NEED_CTX("cuMemAllocHost_v2");
  if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
  int rc = host_alloc(p, n, 1);
  return trace(rc, "cuMemAllocHost_v2(%zu) -> %p", n, *p);
}

EXPORT int cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  NEED_CTX("cuMemHostAlloc");
  if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
  int rc = host_alloc(p, n, 1);
  return trace(rc, "cuMemHostAlloc(%zu, %u) -> %p", n, flags, *p);
}

EXPORT int cuMemFreeHost(void *p) { return trace(cudaFreeHost(p), "cuMemFreeHost(%p)", p); }

EXPORT int cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
  NEED_CTX("cuMemHostRegister_v2");
  return trace(host_register(p, n, 1), "cuMemHostRegister_v2(%p, %zu, %u)", p, n, flags);
}

EXPORT int cuMemHostUnregister(void *p) { return trace(cudaHostUnregister(p), "cuMemHostUnregister(%p)", p); }

/* pinned_at returns the pinned host range holding [p, p+n), or NULL. */
static struct pinned *pinned_at(const char *p, size_t n) {
  struct pinned *hit = NULL;
  pthread_mutex_lock(&mu);
  for (struct pinned *h = pinned_list; h && !hit; h = h->next)
    if (p >= h->p && p - h->p <= (ptrdiff_t)h->n && n <= h->n - (size_t)(p - h->p)) hit = h;
  pthread_mutex_unlock(&mu);
  return hit;
}

/* cuMemHostGetDevicePointer_v2: with unified addressing a pinned host
 * pointer is its own device pointer. */
EXPORT int cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p, unsigned flags) {
  if (!d || flags) return CUDA_ERROR_INVALID_VALUE;
  if (!pinned_at(p, 0)) return trace(CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer_v2(%p) of memory not pinned", p);
  *d = (uintptr_t)p;
  return trace(0, "cuMemHostGetDevicePointer_v2(%p)", p);
}

/* alloc_at returns the allocation that p lies inside (not just past its
 * end), or NULL. Caller holds mu. */
static struct alloc *alloc_at(uintptr_t p) {
  for (struct alloc *a = allocs; a; a = a->next)
    if (p >= a->dev && p - a->dev < a->n) return a;
  return NULL;
}

EXPORT int cuMemGetAddressRange_v2(unsigned long long *base, size_t *size, unsigned long long p) {
  pthread_mutex_lock(&mu);
  struct alloc *a = alloc_at((uintptr_t)p);
  if (a) {
    if (base) *base = a->dev;
    if (size) *size = a->n;
  }
  pthread_mutex_unlock(&mu);
  return trace(a ? 0 : CUDA_ERROR_NOT_FOUND, "cuMemGetAddressRange_v2(%#llx)", p);
}

/* Pointer attributes (cuda.h's CUpointer_attribute). */
enum {
  PA_CONTEXT = 1, PA_MEMORY_TYPE, PA_DEVICE_POINTER, PA_HOST_POINTER, PA_P2P_TOKENS, PA_SYNC_MEMOPS,
  PA_BUFFER_ID, PA_IS_MANAGED, PA_DEVICE_ORDINAL, PA_IS_LEGACY_CUDA_IPC_CAPABLE, PA_RANGE_START_ADDR,
  PA_RANGE_SIZE, PA_MAPPED, PA_ALLOWED_HANDLE_TYPES, PA_IS_GPU_DIRECT_RDMA_CAPABLE, PA_ACCESS_FLAGS,
  PA_MEMPOOL_HANDLE, PA_MAPPING_SIZE, PA_MAPPING_BASE_ADDR, PA_MEMORY_BLOCK_ID,
};
enum { MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2 };

/* attr_size is the size of attribute attr's value, 0 for an unknown one. */
static size_t attr_size(int attr) {
  switch (attr) {
  case PA_CONTEXT: case PA_HOST_POINTER: case PA_MEMPOOL_HANDLE: case PA_RANGE_START_ADDR:
  case PA_MAPPING_BASE_ADDR: case PA_DEVICE_POINTER: return sizeof(void *);
  case PA_MEMORY_TYPE: case PA_SYNC_MEMOPS: case PA_IS_MANAGED: case PA_DEVICE_ORDINAL:
  case PA_IS_LEGACY_CUDA_IPC_CAPABLE: case PA_MAPPED: case PA_IS_GPU_DIRECT_RDMA_CAPABLE:
  case PA_ACCESS_FLAGS: return sizeof(int);
  case PA_P2P_TOKENS: return 2 * sizeof(unsigned long long);
  case PA_BUFFER_ID: case PA_ALLOWED_HANDLE_TYPES: case PA_MEMORY_BLOCK_ID: return sizeof(unsigned long long);
  case PA_RANGE_SIZE: case PA_MAPPING_SIZE: return sizeof(size_t);
  }
  return 0;
}

/* pointer_attr answers one attribute of p; it returns CUDA_ERROR_INVALID_VALUE
 * for a pointer the double does not know (host memory never pinned). */
static int pointer_attr(void *data, int attr, uintptr_t p) {
  union {
    void *ptr;
    unsigned u;
    int i;
    unsigned long long ull;
    size_t sz;
    unsigned long long tokens[2];
  } v;
  size_t size = attr_size(attr);
  if (!data || !size) return CUDA_ERROR_INVALID_VALUE;
  memset(&v, 0, sizeof v);
  pthread_mutex_lock(&mu);
  struct alloc *a = alloc_at(p);
  struct alloc snap = a ? *a : (struct alloc){0};
  pthread_mutex_unlock(&mu);
  struct pinned *h = a ? NULL : pinned_at((const char *)p, 0);
  if (!a && !h) return CUDA_ERROR_INVALID_VALUE;
  int dev = a ? snap.dev_id : 0;
  switch (attr) {
  case PA_CONTEXT: v.ptr = &primary_ctx[dev]; break;
  case PA_MEMORY_TYPE: v.u = a ? MEMORYTYPE_DEVICE : MEMORYTYPE_HOST; break;
  case PA_DEVICE_POINTER: v.ptr = (void *)p; break;
  case PA_HOST_POINTER:
    if (a) return CUDA_ERROR_INVALID_VALUE; /* device memory has no host view */
    v.ptr = (void *)p;
    break;
  case PA_P2P_TOKENS:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    v.tokens[0] = snap.buffer_id;
    v.tokens[1] = 1;
    break;
  case PA_SYNC_MEMOPS: v.u = a ? snap.sync_memops : 1; break;
  case PA_BUFFER_ID: case PA_MEMORY_BLOCK_ID: v.ull = a ? snap.buffer_id : (uintptr_t)h; break;
  case PA_IS_MANAGED: v.u = 0; break;
  case PA_DEVICE_ORDINAL: v.i = dev; break;
  case PA_IS_LEGACY_CUDA_IPC_CAPABLE: v.u = a != NULL; break;
  case PA_RANGE_START_ADDR: case PA_MAPPING_BASE_ADDR: v.ptr = a ? (void *)snap.dev : h->p; break;
  case PA_RANGE_SIZE: case PA_MAPPING_SIZE: v.sz = a ? snap.n : h->n; break;
  case PA_MAPPED: v.u = 1; break;
  case PA_ALLOWED_HANDLE_TYPES: v.ull = 0; break;
  case PA_IS_GPU_DIRECT_RDMA_CAPABLE: v.u = a != NULL; break;
  case PA_ACCESS_FLAGS: v.u = 3; break; /* CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE */
  case PA_MEMPOOL_HANDLE: v.ptr = NULL; break;
  }
  memcpy(data, &v, size);
  return 0;
}

EXPORT int cuPointerGetAttribute(void *data, int attr, unsigned long long p) {
  return trace(pointer_attr(data, attr, (uintptr_t)p), "cuPointerGetAttribute(attr %d, %#llx)", attr, p);
}

/* cuPointerGetAttributes, unlike cuPointerGetAttribute, succeeds for a
 * pointer CUDA does not know, with every value zero (memory type 0). */
EXPORT int cuPointerGetAttributes(unsigned n, int *attrs, void **data, unsigned long long p) {
  if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    size_t size = attr_size(attrs[i]);
    if (!size || !data[i]) return trace(CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttributes(attr %d, %#llx)", attrs[i], p);
    int rc = pointer_attr(data[i], attrs[i], (uintptr_t)p);
    if (rc) memset(data[i], 0, size);
    trace(rc, "cuPointerGetAttributes[%u](attr %d, %#llx)", i, attrs[i], p);
  }
  return 0;
}

/* Copies. An address is device memory when an allocation holds it, else
 * host memory (pinned or not), as unified addressing decides. */

/* view returns where the double reaches n bytes at p: the allocation's
 * own view for device memory, p itself for host memory (want_dev -1),
 * or NULL where p is not of the kind wanted (1 device, 0 host). */
static char *view(uintptr_t p, size_t n, int want_dev) {
  char *r = rw_of(p, n);
  if (r) return want_dev == 0 ? NULL : r;
  if (want_dev == 1) return NULL;
  return (char *)p;
}

static int copy(const char *name, uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n, void *stream) {
  if (!current()) return trace(CUDA_ERROR_INVALID_CONTEXT, "%s without a current context", name);
  char *d = view(dst, n, dst_dev);
  const char *s = view(src, n, src_dev);
  if (!d || !s) return trace(CUDA_ERROR_INVALID_VALUE, "%s(%#lx <- %#lx, %zu) outside memory of that kind", name,
                             (unsigned long)dst, (unsigned long)src, n);
  if (n == 0) return trace(0, "%s(0 bytes)", name);
  return trace(enqueue(stream, d, s, n, 0), "%s(%#lx <- %#lx, %zu, stream %p)", name, (unsigned long)dst,
               (unsigned long)src, n, stream);
}

EXPORT int cuMemcpy(unsigned long long dst, unsigned long long src, size_t n) {
  return copy("cuMemcpy", dst, -1, src, -1, n, NULL);
}
EXPORT int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t n, void *s) {
  return copy("cuMemcpyAsync", dst, -1, src, -1, n, s);
}
EXPORT int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) {
  return copy("cuMemcpyHtoD_v2", dst, 1, (uintptr_t)src, 0, n, NULL);
}
EXPORT int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) {
  return copy("cuMemcpyDtoH_v2", (uintptr_t)dst, 0, src, 1, n, NULL);
}
EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *s) {
  return copy("cuMemcpyHtoDAsync_v2", dst, 1, (uintptr_t)src, 0, n, s);
}
EXPORT int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *s) {
  return copy("cuMemcpyDtoHAsync_v2", (uintptr_t)dst, 0, src, 1, n, s);
}
EXPORT int cuMemcpyPeer(unsigned long long dst, void *dctx, unsigned long long src, void *sctx, size_t n) {
  if (!valid_ctx(dctx) || !valid_ctx(sctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return copy("cuMemcpyPeer", dst, 1, src, 1, n, NULL);
}
EXPORT int cuMemcpyPeerAsync(unsigned long long dst, void *dctx, unsigned long long src, void *sctx, size_t n,
                             void *s) {
  if (!valid_ctx(dctx) || !valid_ctx(sctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return copy("cuMemcpyPeerAsync", dst, 1, src, 1, n, s);
}

static int memset8(const char *name, unsigned long long dst, unsigned char v, size_t n, void *s) {
  if (!current()) return trace(CUDA_ERROR_INVALID_CONTEXT, "%s without a current context", name);
  char *d = view(dst, n, -1);
  if (!d) return trace(CUDA_ERROR_INVALID_VALUE, "%s(%#llx, %zu)", name, dst, n);
  return trace(n ? enqueue(s, d, NULL, n, v) : 0, "%s(%#llx, %u, %zu, stream %p)", name, dst, v, n, s);
}
EXPORT int cuMemsetD8_v2(unsigned long long dst, unsigned char v, size_t n) {
  return memset8("cuMemsetD8_v2", dst, v, n, NULL);
}
EXPORT int cuMemsetD8Async(unsigned long long dst, unsigned char v, size_t n, void *s) {
  return memset8("cuMemsetD8Async", dst, v, n, s);
}

/* Streams and events: the runtime half's. */

EXPORT int cuStreamCreate(void **out, unsigned flags) {
  NEED_CTX("cuStreamCreate");
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  int rc = stream_create(out, 1);
  return trace(rc, "cuStreamCreate(%u) -> %p", flags, *out);
}

EXPORT int cuStreamCreateWithPriority(void **out, unsigned flags, int prio) {
  NEED_CTX("cuStreamCreateWithPriority");
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  int rc = stream_create(out, 1);
  return trace(rc, "cuStreamCreateWithPriority(%u, %d) -> %p", flags, prio, *out);
}

EXPORT int cuStreamDestroy_v2(void *s) { return trace(cudaStreamDestroy(s), "cuStreamDestroy_v2(%p)", s); }

EXPORT int cuStreamSynchronize(void *s) { return trace(cudaStreamSynchronize(s), "cuStreamSynchronize(%p)", s); }

/* cuStreamWaitEvent makes later work on s wait for ev; the double waits
 * here, on the calling thread, which orders the same. */
EXPORT int cuStreamWaitEvent(void *s, void *ev, unsigned flags) {
  if (s && !live_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
  return trace(cudaEventSynchronize(ev), "cuStreamWaitEvent(%p, %p, %u)", s, ev, flags);
}

EXPORT int cuEventCreate(void **out, unsigned flags) {
  NEED_CTX("cuEventCreate");
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  int rc = event_create(out, flags, 1);
  return trace(rc, "cuEventCreate(%u) -> %p", flags, *out);
}
EXPORT int cuEventRecord(void *ev, void *s) { return trace(cudaEventRecord(ev, s), "cuEventRecord(%p, %p)", ev, s); }
EXPORT int cuEventQuery(void *ev) { return trace(cudaEventQuery(ev), "cuEventQuery(%p)", ev); }
EXPORT int cuEventSynchronize(void *ev) { return trace(cudaEventSynchronize(ev), "cuEventSynchronize(%p)", ev); }
EXPORT int cuEventDestroy_v2(void *ev) { return trace(cudaEventDestroy(ev), "cuEventDestroy_v2(%p)", ev); }

/* cuEventElapsedTime: milliseconds between the two recordings; both must
 * have been recorded, have completed and keep timing. */
EXPORT int cuEventElapsedTime(float *ms, void *start, void *end) {
  struct event *a = start, *b = end;
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded || (a->flags & 2) || (b->flags & 2)) return CUDA_ERROR_INVALID_HANDLE;
  int rc = cudaEventQuery(a);
  if (!rc) rc = cudaEventQuery(b);
  if (rc) return rc;
  *ms = (float)((b->when.tv_sec - a->when.tv_sec) * 1e3 + (b->when.tv_nsec - a->when.tv_nsec) / 1e6);
  return trace(0, "cuEventElapsedTime() -> %f", *ms);
}

/* Inter-process sharing is refused: the double's memory is per process. */
EXPORT int cuIpcGetMemHandle(void *h, unsigned long long p) {
  (void)h;
  return trace(CUDA_ERROR_NOT_SUPPORTED, "cuIpcGetMemHandle(%#llx)", p);
}
EXPORT int cuIpcOpenMemHandle(unsigned long long *p, const void *h, unsigned flags) {
  (void)p, (void)h;
  return trace(CUDA_ERROR_NOT_SUPPORTED, "cuIpcOpenMemHandle(%u)", flags);
}
EXPORT int cuIpcCloseMemHandle(unsigned long long p) {
  return trace(CUDA_ERROR_INVALID_VALUE, "cuIpcCloseMemHandle(%#llx)", p);
}
EXPORT int cuIpcGetEventHandle(void *h, void *ev) {
  (void)h;
  return trace(CUDA_ERROR_NOT_SUPPORTED, "cuIpcGetEventHandle(%p)", ev);
}
EXPORT int cuIpcOpenEventHandle(void **ev, const void *h) {
  (void)ev, (void)h;
  return trace(CUDA_ERROR_NOT_SUPPORTED, "cuIpcOpenEventHandle()");
}

/* cuLaunchHostFunc runs fn(arg) on the stream's thread once the work
 * queued before it is done. */
EXPORT int cuLaunchHostFunc(void *s, void (*fn)(void *), void *arg) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  struct op o = {.kind = OP_HOSTFN, .fn = fn, .arg = arg};
  return trace(enqueue_op(s, &o), "cuLaunchHostFunc(%p)", s);
}

/* word32 is where the double reaches the 32-bit word at addr: device
 * memory, or pinned host memory (its own address). */
static char *word32(unsigned long long addr) {
  if (addr % 4) return NULL;
  char *d = rw_of((uintptr_t)addr, 4);
  if (d) return d;
  return pinned_at((const char *)(uintptr_t)addr, 4) ? (char *)(uintptr_t)addr : NULL;
}

/* cuStreamWaitValue32 holds later work on s until the word meets the
 * condition in flags; cuStreamWriteValue32 writes it in stream order. */
static int wait_value32(const char *name, void *s, unsigned long long addr, uint32_t v, unsigned flags) {
  char *w = word32(addr);
  if (!w) return trace(CUDA_ERROR_INVALID_VALUE, "%s(%#llx) outside device or pinned memory", name, addr);
  struct op o = {.kind = OP_WAIT32, .dst = w, .n = 4, .value = v, .val = (int)(flags & 3)};
  return trace(enqueue_op(s, &o), "%s(%p, %#llx, %u, %u)", name, s, addr, v, flags);
}
static int write_value32(const char *name, void *s, unsigned long long addr, uint32_t v, unsigned flags) {
  char *w = word32(addr);
  if (!w) return trace(CUDA_ERROR_INVALID_VALUE, "%s(%#llx) outside device or pinned memory", name, addr);
  struct op o = {.kind = OP_WRITE32, .dst = w, .n = 4, .value = v};
  return trace(enqueue_op(s, &o), "%s(%p, %#llx, %u, %u)", name, s, addr, v, flags);
}
EXPORT int cuStreamWaitValue32(void *s, unsigned long long a, uint32_t v, unsigned f) {
  return wait_value32("cuStreamWaitValue32", s, a, v, f);
}
EXPORT int cuStreamWaitValue32_v2(void *s, unsigned long long a, uint32_t v, unsigned f) {
  return wait_value32("cuStreamWaitValue32_v2", s, a, v, f);
}
EXPORT int cuStreamWriteValue32(void *s, unsigned long long a, uint32_t v, unsigned f) {
  return write_value32("cuStreamWriteValue32", s, a, v, f);
}
EXPORT int cuStreamWriteValue32_v2(void *s, unsigned long long a, uint32_t v, unsigned f) {
  return write_value32("cuStreamWriteValue32_v2", s, a, v, f);
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int d) { return cuDevicePrimaryCtxRelease(d); }

EXPORT int cuIpcOpenMemHandle_v2(unsigned long long *p, const void *h, unsigned flags) {
  return cuIpcOpenMemHandle(p, h, flags);
}

/* cuGetExportTable hands out the driver's private tables, which only
 * NVIDIA's runtime knows: the double has none. */
EXPORT int cuGetExportTable(const void **table, const void *id) {
  (void)id;
  if (table) *table = NULL;
  return trace(CUDA_ERROR_NOT_SUPPORTED, "cuGetExportTable()");
}

/* cuMemGetHandleForAddressRange hands out a dma-buf fd (type 1): here a dup
 * of the allocation's memfd. Like the real one it wants a host-page-aligned
 * range. Fault "dmabuf" answers CUDA_ERROR_NOT_SUPPORTED (801), as a driver
 * without dma-buf support does. */
EXPORT int cuMemGetHandleForAddressRange(void *handle, unsigned long long dptr, size_t size, int type,
                                         unsigned long long flags) {
  (void)flags;
  if (type != 1 || !handle) return 1;
  if (fault_is("dmabuf", NULL)) return 801;
  if (dptr % PAGE || size % PAGE) return 1;
  pthread_mutex_lock(&mu);
  struct alloc *a = find((uintptr_t)dptr, size);
  int fd = a ? fcntl(a->fd, F_DUPFD_CLOEXEC, 3) : -1;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0) {
    /* An entry with the same number was closed before: drop it. */
    for (struct dmabuf **pp = &dmabufs, *d; (d = *pp);) {
      if (d->fd == fd) {
        *pp = d->next;
        free(d);
      } else {
        pp = &d->next;
      }
    }
    struct dmabuf *d = calloc(1, sizeof *d);
    d->fd = fd;
    d->dev = st.st_dev;
    d->ino = st.st_ino;
    d->next = dmabufs;
    dmabufs = d;
  }
  pthread_mutex_unlock(&mu);
  if (fd < 0) return 1;
  *(int *)handle = fd;
  return 0;
}

/* Fault "sync_memops" answers CUDA_ERROR_NOT_SUPPORTED (801). */
EXPORT int cuPointerSetAttribute(const void *value, int attr, unsigned long long ptr) {
  if (!value || attr != 6) return 1; /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS */
  if (fault_is("sync_memops", NULL)) return 801;
  pthread_mutex_lock(&mu);
  struct alloc *a = alloc_at((uintptr_t)ptr);
  if (a) a->sync_memops = *(const unsigned *)value;
  pthread_mutex_unlock(&mu);
  return trace(a ? 0 : 1, "cuPointerSetAttribute(attr %d, %#llx)", attr, ptr);
}
