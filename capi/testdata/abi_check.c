/*
 * abi_check.c: a C consumer of gdsload.h, compiled and run by abi_test.go
 * against a freshly built libgdsload.so. It loads the one-tensor
 * safetensors file argv[1] (F32, shape [n]), prints the tensor through a
 * DLPack view, frees everything, and tries argv[2] (missing) and argv[3]
 * (corrupt), printing their statuses and messages.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dlpack.h"
#include "../gdsload.h"

static int run(const char *path, char **result, char **err) {
	char req[4096];
	snprintf(req, sizeof req, "{\"path\":\"%s\",\"device\":\"cpu\"}", path);
	uint64_t job = 0;
	gdsload_status st = gdsload_load(req, &job, err);
	if (st != GDSLOAD_OK) return st;
	while ((st = gdsload_wait(job, 100, result, err)) == GDSLOAD_PENDING) {
	}
	return st;
}

static uint64_t field(const char *doc, const char *name) {
	const char *p = strstr(doc, name);
	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

int main(int argc, char **argv) {
	if (argc != 4) return 2;
	printf("abi %d header %d\n", gdsload_abi_version(), GDSLOAD_ABI_VERSION);
	char *info = gdsload_build_info();
	printf("info %s\n", strstr(info, "\"abi\":1") ? "ok" : info);
	gdsload_free(info);

	char *res = NULL, *err = NULL;
	int st = run(argv[1], &res, &err);
	if (st != GDSLOAD_OK) {
		printf("load failed %d: %s\n", st, err);
		return 1;
	}
	gdsload_alloc *a = (gdsload_alloc *)(uintptr_t)field(res, "\"handle\":");
	uint64_t offset = field(res, "\"offset\":");
	int64_t n = (int64_t)field(res, "\"shape\":[");
	gdsload_free(res);
	printf("live %" PRId64 "\n", gdsload_live_allocations());
	DLManagedTensor *t = gdsload_dlpack(a, offset, kDLFloat, 32, 1, &n, 0, 0);
	DLManagedTensorVersioned *v = gdsload_dlpack(a, offset, kDLFloat, 32, 1, &n, 1, 1);
	int64_t past = n + 1000000;
	void *bad = gdsload_dlpack(a, offset, kDLFloat, 32, 1, &past, 0, 0);
	gdsload_alloc_release(a); /* the views keep it */
	printf("values");
	const float *f = (const float *)((const char *)t->dl_tensor.data + t->dl_tensor.byte_offset);
	for (int64_t i = 0; i < t->dl_tensor.shape[0]; i++) printf(" %g", f[i]);
	printf("\nversioned %u.%u readonly %d device %d past-the-end %s\n", v->version.major, v->version.minor,
	       (int)(v->flags & DLPACK_FLAG_BITMASK_READ_ONLY), t->dl_tensor.device.device_type, bad ? "made" : "refused");
	t->deleter(t);
	printf("live %" PRId64 "\n", gdsload_live_allocations());
	v->deleter(v);
	printf("live %" PRId64 "\n", gdsload_live_allocations());

	for (int i = 2; i <= 3; i++) {
		err = NULL;
		st = run(argv[i], &res, &err);
		printf("status %d: %s\n", st, err ? err : "(none)");
		gdsload_free(err);
	}
	return 0;
}
