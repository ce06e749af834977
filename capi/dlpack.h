/*
 * dlpack.h: the DLPack structures gdsload hands out, as the DLPack
 * specification (https://dmlc.github.io/dlpack/latest/) lays them out:
 * the legacy DLManagedTensor (capsule name "dltensor") and DLPack 1.0's
 * DLManagedTensorVersioned ("dltensor_versioned"). Declared here rather
 * than vendored because only these few types are needed.
 */
#ifndef GDSLOAD_DLPACK_H
#define GDSLOAD_DLPACK_H

#include <stdint.h>

#define GDSLOAD_DLPACK_MAJOR 1
#define GDSLOAD_DLPACK_MINOR 0

/* Device types. */
enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };

/* Type codes (DLPack 1.1 adds the float8 ones). */
enum {
	kDLInt = 0,
	kDLUInt = 1,
	kDLFloat = 2,
	kDLBfloat = 4,
	kDLComplex = 5,
	kDLBool = 6,
	kDLFloat8_e4m3fn = 10,
	kDLFloat8_e4m3fnuz = 11,
	kDLFloat8_e5m2 = 12,
	kDLFloat8_e5m2fnuz = 13,
	kDLFloat8_e8m0fnu = 14
};

/* DLPack 1.0 flags of a versioned tensor. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct {
	int32_t device_type;
	int32_t device_id;
} DLDevice;

typedef struct {
	uint8_t code;
	uint8_t bits;
	uint16_t lanes;
} DLDataType;

typedef struct {
	void *data;
	DLDevice device;
	int32_t ndim;
	DLDataType dtype;
	int64_t *shape;
	int64_t *strides;
	uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
	DLTensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
	uint32_t major;
	uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
	DLPackVersion version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
	DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* GDSLOAD_DLPACK_H */
