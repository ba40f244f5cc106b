/* Instancing queries (synchronous): prototypes and the instance roots that share them. */
#ifndef OVSTAGE_INSTANCING_H
#define OVSTAGE_INSTANCING_H

#include "../ovx/types.h"
#include "ovstage_api/ovstage_api_defines.h"
#include "ovstage_api/ovstage_api_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A fresh path list (one reference for the caller, possibly empty). */
OVSTAGE_API ovstage_api_status_t ovstage_instancing_get_instance_roots(
    ovstage_instance_t* instance, ovx_primpath_t prototype_root,
    ovx_primpath_list_t* out_instance_roots);

/* NOT_FOUND when instance_root is not an instance root. */
OVSTAGE_API ovstage_api_status_t ovstage_instancing_get_prototype_root(
    ovstage_instance_t* instance, ovx_primpath_t instance_root,
    ovx_primpath_t* out_prototype_root);

/* A fresh path list (one reference for the caller). */
OVSTAGE_API ovstage_api_status_t ovstage_instancing_get_prototype_roots(
    ovstage_instance_t* instance, ovx_primpath_list_t* out_prototype_roots);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_INSTANCING_H */
