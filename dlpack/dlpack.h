// DLPack 1.x ABI as used by ovstage-go: struct layouts follow the public DLPack specification
// (DLTensor, DLManagedTensor, DLManagedTensorVersioned). Written for this project.
#ifndef OVS_DLPACK_H
#define OVS_DLPACK_H

#include <stdint.h>

#define OVS_DLPACK_MAJOR 1
#define OVS_DLPACK_MINOR 0

#define OVS_DLPACK_FLAG_READ_ONLY 1ULL
#define OVS_DLPACK_FLAG_IS_COPIED 2ULL

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLOpaqueHandle = 3, kDLBfloat = 4,
       kDLComplex = 5, kDLBool = 6 };

typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;

typedef struct {
	void* data;
	DLDevice device;
	int32_t ndim;
	DLDataType dtype;
	int64_t* shape;
	int64_t* strides;
	uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
	DLTensor dl_tensor;
	void* manager_ctx;
	void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
	DLPackVersion version;
	void* manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned* self);
	uint64_t flags;
	DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif
