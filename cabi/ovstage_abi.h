// ovstage C ABI result structs (spec Appendix A field order), built in C memory so the Python
// layer can view them with ctypes (ReadGroup.raw) without per-field calls into Go.
#ifndef OVS_ABI_H
#define OVS_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dlpack.h"

typedef struct { uintptr_t stream; uintptr_t wait_event; } ovstage_cuda_sync_t;
// ovstage_mask_t: LSB-first bit words (bit i of word i/64).
typedef struct { const uint64_t* bits; size_t word_count; } ovstage_mask_t;

typedef struct {
	const DLTensor* tensors;
	uint32_t tensor_count;
	uint32_t count;
	const uint32_t* index_map;
	ovstage_mask_t mask;
	ovstage_cuda_sync_t cuda_sync;
} ovstage_data_t;

typedef struct {
	uint64_t list;
	uint32_t offset;
	uint32_t count;
	const uint32_t* index_map;
} ovstage_prim_group_t;

typedef struct {
	uint64_t attribute_write_floor_ordinal;
	uint64_t layout_generation;
} ovstage_attribute_meta_t;

typedef struct {
	uint64_t read_group_id;
	uint64_t attribute;
	uint64_t ordinal;
	bool is_delete;
	bool is_array;
	int32_t semantic;
	ovstage_prim_group_t prims;
	ovstage_data_t data;
	ovstage_attribute_meta_t meta;
} ovstage_read_group_t;

#endif
