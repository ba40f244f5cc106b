/*
 * DLPack 1.3 tensor interchange types, as the ovstage C API uses them: device and data-type
 * descriptors, the plain DLTensor view and the two managed (owning) tensor wrappers.
 * Written for ovstage-go; layouts and values follow the DLPack 1.3 ABI (see docs/c-api.md).
 *
 * The include guard is the one DLPack's own header uses, so a program that already included
 * an upstream dlpack.h (1.x) gets one set of definitions, whichever header came first.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

/* Bits of DLManagedTensorVersioned.flags. */
/* READ_ONLY: the consumer must not write. IS_COPIED: the producer made a copy.
 * IS_SUBBYTE_TYPE_PADDED: sub-byte elements are each padded to a whole byte. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2)

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version carried by a versioned managed tensor. */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* Where a tensor's memory lives. Under C++ the enum is pinned to 32 bits. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
    kDLTrn = 18
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id; /* ordinal of the device within its type */
} DLDevice;

/* Element kinds; stored in the one-byte DLDataType.code. */
typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
    kDLFloat8_e3m4 = 7,
    kDLFloat8_e4m3 = 8,
    kDLFloat8_e4m3b11fnuz = 9,
    kDLFloat8_e4m3fn = 10,
    kDLFloat8_e4m3fnuz = 11,
    kDLFloat8_e5m2 = 12,
    kDLFloat8_e5m2fnuz = 13,
    kDLFloat8_e8m0fnu = 14,
    kDLFloat6_e2m3fn = 15,
    kDLFloat6_e3m2fn = 16,
    kDLFloat4_e2m1fn = 17
} DLDataTypeCode;

/* One element: `lanes` values of `bits` bits each, of kind `code` (a DLDataTypeCode). */
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/*
 * A strided view of memory. The first byte is data + byte_offset; `shape` and `strides` hold
 * `ndim` entries; strides count elements, and NULL strides mean compact row-major.
 */
typedef struct {
    void* data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t* shape;
    int64_t* strides;
    uint64_t byte_offset;
} DLTensor;

/* Pre-1.0 owning wrapper: the consumer calls deleter(self) exactly once when done. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/* Owning wrapper with an ABI version and DLPACK_FLAG_BITMASK_* flags. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned* self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */
