package pybind

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// The process-wide path dictionary (core/pathdict).

// InternToken interns s.
func InternToken(s string) (uint64, error) {
	return call(func() (uint64, error) { return pathdict.Global().InternToken(s) })
}

// TokenToString returns the string of a token.
func TokenToString(tok uint64) (string, error) {
	return call(func() (string, error) { return pathdict.Global().TokenString(tok) })
}

// InternPath interns an absolute path string.
func InternPath(s string) (uint64, error) {
	return call(func() (uint64, error) { return pathdict.Global().InternPath(s) })
}

// PathToString formats a path ("/" for the root).
func PathToString(p uint64) (string, error) {
	return call(func() (string, error) { return pathdict.Global().PathString(p) })
}

// CreatePathListFromPaths makes a list from uint64[n] path ids at addr.
func CreatePathListFromPaths(addr uintptr, n int) (uint64, error) {
	return call(func() (uint64, error) {
		return pathdict.Global().CreateList(cptr.Uint64s(addr, n))
	})
}

// CreatePathListFromStrings makes a list from n UTF-8 path strings packed back to back in
// blobLen bytes at blobAddr; their byte lengths are uint64[n] at lensAddr.
func CreatePathListFromStrings(blobAddr uintptr, blobLen int, lensAddr uintptr, n int) (uint64, error) {
	return call(func() (uint64, error) {
		strs, err := cptr.Strings(blobAddr, blobLen, cptr.Uint64s(lensAddr, n))
		if err != nil {
			return 0, &pathdict.Error{Message: err.Error()}
		}
		return pathdict.Global().CreateListFromStrings(strs)
	})
}

// AddPathListReference adds a reference to a list (0 is a no-op).
func AddPathListReference(list uint64) (bool, error) {
	return call(func() (bool, error) { return true, pathdict.Global().AddRef(list) })
}

// ReleasePathListReference drops a reference and returns how many remain.
func ReleasePathListReference(list uint64) (int, error) {
	return call(func() (int, error) { return pathdict.Global().Release(list) })
}

// PathListCount is the number of paths in a list.
func PathListCount(list uint64) (int, error) {
	return call(func() (int, error) {
		paths, err := pathdict.Global().ListPaths(list)
		return len(paths), err
	})
}

// PathListCopy copies up to max path ids of a list into uint64[max] at out.
func PathListCopy(list uint64, out uintptr, max int) (int, error) {
	return call(func() (int, error) {
		paths, err := pathdict.Global().ListPaths(list)
		if err != nil {
			return 0, err
		}
		n := min(max, len(paths))
		if n > 0 {
			copy(unsafe.Slice((*uint64)(cptr.At(out)), n), paths[:n])
		}
		return n, nil
	})
}
