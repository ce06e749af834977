/*
 * procmodules.c: an LD_PRELOAD shim for machines whose kernel is built
 * without loadable modules, so /proc/modules does not exist.
 *
 * cuFile 1.14 (PyPI nvidia-cufile-cu12) reads /proc/modules in
 * cuFileDriverOpen, looking for nvidia_peermem, in a loop that ends only
 * at end of file: a file that fails to open never reaches it, and the
 * driver open spins forever. Opened through fopen (as libstdc++'s ifstream
 * does), /proc/modules here reads as an empty file: no module loaded,
 * which is what such a kernel has. Every other path is opened as usual.
 * The harness preloads it only where /proc/modules is missing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static FILE *(*real_fopen64)(const char *, const char *);

static const char *redirect(const char *path) {
  return strcmp(path, "/proc/modules") == 0 ? "/dev/null" : path;
}

FILE *fopen64(const char *path, const char *mode) {
  if (!real_fopen64) real_fopen64 = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
  return real_fopen64(redirect(path), mode);
}

FILE *fopen(const char *path, const char *mode) { return fopen64(path, mode); }
