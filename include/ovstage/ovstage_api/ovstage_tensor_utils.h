/*
 * ovstage_tensor_to_write: turn a tensor of a read or map group (typed layout: scalar lanes,
 * component axes such as [R, 3] or [R, 4, 4]) into the lane-based layout writes take
 * ([R] with lanes 3 or 16), without copying the payload.
 */
#ifndef OVSTAGE_TENSOR_UTILS_H
#define OVSTAGE_TENSOR_UTILS_H

#include <stddef.h>
#include <stdint.h>

#include "ovstage_api_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Writes into *output a copy of *source with ndim 1, the trailing axes folded into
 * dtype.lanes, shape = &layout[0] (the row count) and strides = &layout[1] (the row stride in
 * lane elements; 0 keeps a broadcast). The trailing axes must be compact, their product at
 * most 255, and the row stride a non-negative multiple of that product.
 *
 * Returns OVSTAGE_ERROR_INVALID_ARGUMENT, leaving *output and layout untouched, for a NULL
 * pointer or shape, lanes != 1, ndim outside 1..3, a negative row count, or axes that do not
 * fold. Keep `layout` and the payload alive until the write that uses *output completes.
 */
static inline ovstage_api_status_t ovstage_tensor_to_write(const DLTensor* source,
                                                           DLTensor* output, int64_t layout[2])
{
    DLTensor folded;
    int64_t components = 1;
    int64_t row_stride;
    int32_t axis;

    if (source == NULL || output == NULL || layout == NULL || source->shape == NULL) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    if (source->dtype.lanes != 1 || source->ndim < 1 || source->ndim > 3 ||
        source->shape[0] < 0) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    for (axis = source->ndim - 1; axis >= 1; --axis) {
        const int64_t extent = source->shape[axis];
        if (extent < 1 || extent > 255 / components) {
            return OVSTAGE_ERROR_INVALID_ARGUMENT;
        }
        if (source->strides != NULL && source->strides[axis] != components) {
            return OVSTAGE_ERROR_INVALID_ARGUMENT;
        }
        components *= extent;
    }
    row_stride = source->strides != NULL ? source->strides[0] : components;
    if (row_stride < 0 || row_stride % components != 0) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }

    folded = *source;
    folded.ndim = 1;
    folded.dtype.lanes = (uint16_t)components;
    layout[0] = source->shape[0];
    layout[1] = row_stride / components;
    folded.shape = &layout[0];
    folded.strides = &layout[1];
    *output = folded;
    return OVSTAGE_OK;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_TENSOR_UTILS_H */
