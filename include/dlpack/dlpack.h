/* <dlpack/dlpack.h>: the DLPack types ovstage uses; the definitions live in ovx/dlpack. */
#ifndef OVSTAGE_DLPACK_FORWARD_H
#define OVSTAGE_DLPACK_FORWARD_H

#include "../ovx/dlpack/dlpack.h"

#endif /* OVSTAGE_DLPACK_FORWARD_H */
