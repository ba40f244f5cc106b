// Command capi is libovstage.so, the ovstage C library: built with -buildmode=c-shared
// (`make libovstage`), it exports the 53 functions of the ovstage C API and fills the instance
// vtable, the path dictionary vtable and the placement extension table of the headers in
// include/. C shims (*.c) take each entry point's exact C types and call the Go exports
// (ovsgo_*, hidden from the library's exported symbols by exports.map); requests are decoded
// and results encoded by package abi, the work is done by package core. See docs/c-api.md.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -Wall -Wextra
#include "capi.h"
*/
import "C"

func main() {}
