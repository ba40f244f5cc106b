package abi

/*
#include <stdlib.h>
#include <string.h>
#include <ovstage/ovstage.h>
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// Build identity, set at link time (-ldflags "-X github.com/ovstage-go/ovstage/abi.gitHash=...",
// see the Makefile); a plain `go build` reports these defaults.
var (
	gitBranch     = "local"
	buildNumber   = "0"
	gitHash       = "unknown"
	buildLocation = "local"
)

// Version is the API version the headers describe (OVSTAGE_VERSION_*): what get_version, the
// Python library_version() and the semver part of the build string report.
var Version = [3]uint32{C.OVSTAGE_VERSION_MAJOR, C.OVSTAGE_VERSION_MINOR, C.OVSTAGE_VERSION_PATCH}

// buildField keeps a build_string field to the characters semver build metadata allows.
func buildField(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// BuildInfo is the address of an ovstage_build_info_t describing this build, made once in C
// memory (with its NUL-terminated strings) that lives as long as the process: both front ends
// hand it out as their get_build_info. Its build_string is
// "<major>.<minor>.<patch>+<branch>.<number>.<hash>.<location>".
var BuildInfo = sync.OnceValue(func() unsafe.Pointer {
	var number uint32
	_, _ = fmt.Sscanf(buildNumber, "%d", &number)
	branch, hash, location := buildField(gitBranch), buildField(gitHash), buildField(buildLocation)
	text := []string{
		fmt.Sprintf("%d.%d.%d+%s.%d.%s.%s", Version[0], Version[1], Version[2], branch, number, hash, location),
		branch, hash, location,
	}
	size := unsafe.Sizeof(C.ovstage_build_info_t{})
	total := size
	for _, s := range text {
		total += uintptr(len(s)) + 1
	}
	block := C.calloc(1, C.size_t(total))
	if block == nil {
		panic("abi: cannot allocate the build information")
	}
	info := (*C.ovstage_build_info_t)(block)
	info.struct_size = C.uint32_t(size)
	info.build_number = C.uint32_t(number)
	at := unsafe.Add(block, size)
	fields := []*C.ovx_string_t{&info.build_string, &info.git_branch, &info.git_hash, &info.build_location}
	for i, s := range text {
		C.memcpy(at, unsafe.Pointer(unsafe.StringData(s)), C.size_t(len(s)))
		fields[i].ptr, fields[i].length = (*C.char)(at), C.size_t(len(s))
		at = unsafe.Add(at, len(s)+1)
	}
	return block
})
