// Package status defines the ovstage status codes (the reference's numeric values) and the
// error type that carries one. Every error the engine reports is an *Error.
package status

import (
	"errors"
	"fmt"
)

// Code is an ovstage_api_status_t value.
type Code int32

// Status codes with the reference's ABI values.
const (
	OK                  Code = 0
	InvalidArgument     Code = 1
	InvalidHandle       Code = 2
	NotFound            Code = 3
	PrimNotFound        Code = 4
	WriteFloorViolation Code = 5
	NotSupported        Code = 6
	QueueFull           Code = 7
	EndOfIteration      Code = 8
	OutOfMemory         Code = 9
	LayoutChanged       Code = 10
	Timeout             Code = 11
	OpFailed            Code = 12
	OutOfRange          Code = 13
	Internal            Code = 99
)

var names = map[Code]string{
	OK: "OK", InvalidArgument: "INVALID_ARGUMENT", InvalidHandle: "INVALID_HANDLE",
	NotFound: "NOT_FOUND", PrimNotFound: "PRIM_NOT_FOUND",
	WriteFloorViolation: "WRITE_FLOOR_VIOLATION", NotSupported: "NOT_SUPPORTED",
	QueueFull: "QUEUE_FULL", EndOfIteration: "END_OF_ITERATION", OutOfMemory: "OUT_OF_MEMORY",
	LayoutChanged: "LAYOUT_CHANGED", Timeout: "TIMEOUT", OpFailed: "OP_FAILED",
	OutOfRange: "OUT_OF_RANGE", Internal: "INTERNAL",
}

// String returns the ErrorCode name used by the Python package.
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("ERROR_%d", int32(c))
}

// Error is a status code plus a human message naming the offending argument and value.
type Error struct {
	Code    Code
	Message string
	// Malformed marks an INVALID_ARGUMENT found in the request alone (its arguments contradict
	// each other, before any stage state is read). The C API reports it as its Code; the Python
	// package raises it as ValueError, like its own argument checks (pybind/API.md).
	Malformed bool
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// outOfMemory is an error of a leaf package that imports nothing of the project (core/buffer's
// allocation failures) and so says its status by a method.
type outOfMemory interface{ OutOfMemory() bool }

// Malformedf builds a malformed-request INVALID_ARGUMENT (see Error.Malformed).
func Malformedf(format string, args ...any) *Error {
	return &Error{Code: InvalidArgument, Message: fmt.Sprintf(format, args...), Malformed: true}
}

// IsMalformed reports whether err is a malformed-request error.
func IsMalformed(err error) bool {
	var se *Error
	return errors.As(err, &se) && se.Malformed
}

// CodeOf returns the status carried by err: OK for nil, the *Error's code when err wraps one,
// OutOfMemory for an error that reports OutOfMemory() true, Internal otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var se *Error
	if errors.As(err, &se) {
		return se.Code
	}
	var oom outOfMemory
	if errors.As(err, &oom) && oom.OutOfMemory() {
		return OutOfMemory
	}
	return Internal
}

// MessageOf returns the message of err without the code prefix.
func MessageOf(err error) string {
	if err == nil {
		return ""
	}
	var se *Error
	if errors.As(err, &se) {
		return se.Message
	}
	return err.Error()
}

// Describe is err's message, prefixed with its status name unless the status is OP_FAILED:
// callers see every execution failure as OP_FAILED, so the specific status travels in the text.
func Describe(err error) string {
	if c := CodeOf(err); c != OpFailed {
		return c.String() + ": " + MessageOf(err)
	}
	return MessageOf(err)
}
