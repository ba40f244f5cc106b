package main

/*
#include <stdlib.h>
#include <string.h>
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/lifecycle"
)

//export ovsgo_build_info
func ovsgo_build_info(out *C.ovstage_build_info_t) {
	defer func() {
		if r := recover(); r != nil {
			_ = recovered("ovstage_get_build_info", r)
		}
	}()
	info := abi.BuildInfo() // the strings live in this block, for the library's lifetime
	C.ovs_retain_forever(info)
	*out = *(*C.ovstage_build_info_t)(info)
}

//export ovsgo_initialize
func ovsgo_initialize(config unsafe.Pointer) (code C.int) {
	const fn = "ovstage_initialize"
	defer guard(fn, &code)
	entries, err := abi.Config(config)
	if err != nil {
		return fail(fn, err)
	}
	return result(fn, lifecycle.Global().Initialize(entries))
}

//export ovsgo_shutdown
func ovsgo_shutdown() (code C.int) {
	const fn = "ovstage_shutdown"
	defer guard(fn, &code)
	return result(fn, lifecycle.Global().Shutdown())
}
