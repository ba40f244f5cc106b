package main

/*
#include <stdlib.h>
#include <string.h>
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/lifecycle"
)

// Build identity, set at link time by `make libovstage` (-ldflags -X main.gitHash=...).
var (
	gitBranch     = "local"
	buildNumber   = "0"
	gitHash       = "unknown"
	buildLocation = "local"
)

// buildField keeps a build_string field to the characters semver build metadata allows.
func buildField(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// libraryString is a NUL-terminated copy that lives as long as the library.
func libraryString(s string) C.ovx_string_t {
	p := C.CString(s)
	C.ovs_retain_forever(unsafe.Pointer(p))
	return C.ovx_string_t{ptr: p, length: C.size_t(len(s))}
}

//export ovsgo_build_info
func ovsgo_build_info(out *C.ovstage_build_info_t) {
	defer func() {
		if r := recover(); r != nil {
			_ = recovered("ovstage_get_build_info", r)
		}
	}()
	branch, hash, location := buildField(gitBranch), buildField(gitHash), buildField(buildLocation)
	var number uint32
	_, _ = fmt.Sscanf(buildNumber, "%d", &number)
	// The semver part is the API version the headers describe (the get_version slot).
	version := fmt.Sprintf("%d.%d.%d+%s.%d.%s.%s", C.OVSTAGE_VERSION_MAJOR, C.OVSTAGE_VERSION_MINOR,
		C.OVSTAGE_VERSION_PATCH, branch, number, hash, location)
	out.struct_size = C.uint32_t(unsafe.Sizeof(C.ovstage_build_info_t{}))
	out.build_number = C.uint32_t(number)
	out.build_string = libraryString(version)
	out.git_branch = libraryString(branch)
	out.git_hash = libraryString(hash)
	out.build_location = libraryString(location)
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
