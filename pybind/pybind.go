// Package pybind is the gopy facade over core: flat functions of ints, bools, strings and
// addresses (see API.md). It is the only package handed to gopy. Requests cross as the
// addresses of the C API's own structs (include/), which python/ovstage/_abi.py builds as
// ctypes mirrors, and are decoded by abi/: the same code the C library (capi/) runs. Every
// function returns (T, error), recovers panics, and encodes the status in the error text
// ("[ovstage:<code>] ..." or "[ovx:1] ..." for path-dictionary failures) for
// python/ovstage/_lib.py to map.
//
// Files are named after the core/ file whose functions they expose.
package pybind

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/status"
)

// Codes of the error text that are not statuses.
const (
	// fallbackCode: the numpy fast path cannot take this write; the caller takes the general
	// path (not an error of the write).
	fallbackCode = -1
	// malformedCode: the request contradicts itself (status.Malformedf); the Python package
	// raises ValueError, as it does for its own argument checks.
	malformedCode = -2
)

// encode turns an engine error into the prefixed text the Python layer parses.
func encode(err error) error {
	if err == nil {
		return nil
	}
	var pe *pathdict.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("[ovx:1] %s", pe.Message)
	}
	code := int32(status.CodeOf(err))
	if status.IsMalformed(err) {
		code = malformedCode
	}
	return fmt.Errorf("[ovstage:%d] %s", code, status.MessageOf(err))
}

// call runs fn, recovering a panic into an INTERNAL error so the interpreter survives.
func call[T any](fn func() (T, error)) (res T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			res, err = zero, fmt.Errorf("[ovstage:99] internal panic: %v\n%s", r, debug.Stack())
			logbus.Logf(logbus.Error, logbus.ChannelInternal, "internal panic in an API call: %v", r)
		}
	}()
	res, err = fn()
	return res, encode(err)
}

// withStage is call for a function of one stage: it looks the stage up (INVALID_HANDLE when it
// does not exist) and runs fn on it.
func withStage[T any](id uint64, fn func(s *core.Stage) (T, error)) (T, error) {
	return call(func() (T, error) {
		s, err := core.Lookup(id)
		if err != nil {
			var zero T
			return zero, err
		}
		return fn(s)
	})
}

// handleAndOp is the "<handle> <op id>" answer of an enqueue that reserves a handle.
func handleAndOp(h, op uint64, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return strconv.FormatUint(h, 10) + " " + strconv.FormatUint(op, 10), nil
}

// joinIDs is ids comma-separated in decimal ("" when empty).
func joinIDs(ids []uint64) string {
	if len(ids) == 0 {
		return ""
	}
	buf := make([]byte, 0, 8*len(ids))
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(buf, id, 10)
	}
	return string(buf)
}

// LibraryVersion returns the API version "major.minor.patch" of the headers (abi.Version,
// what the C library's get_version reports).
func LibraryVersion() (string, error) {
	v := abi.Version
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]), nil
}

// AttributeAliases returns the engine's attribute aliases (core.AttributeAliases), one
// "public storage" pair a line.
func AttributeAliases() (string, error) {
	var b strings.Builder
	for _, pair := range core.AttributeAliases() {
		b.WriteString(pair[0] + " " + pair[1] + "\n")
	}
	return b.String(), nil
}

// BuildInfo returns the address of the ovstage_build_info_t describing this build
// (abi.BuildInfo: C memory that lives as long as the process).
func BuildInfo() (uintptr, error) {
	return call(func() (uintptr, error) { return uintptr(abi.BuildInfo()), nil })
}
