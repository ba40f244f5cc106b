package pybind

import (
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// A stage's own path dictionary (core/pathdict); every function takes the stage id.

// withDictionary is call for a function of a stage's dictionary; a stage that is gone is a
// path-dictionary error (OvxError in Python), as every other dictionary failure.
func withDictionary[T any](stageID uint64, fn func(d *pathdict.Dictionary) (T, error)) (T, error) {
	return call(func() (T, error) {
		s, err := core.Lookup(stageID)
		if err != nil {
			var zero T
			return zero, &pathdict.Error{Message: "PathDictionary backing Stage has been destroyed"}
		}
		return fn(s.Dictionary())
	})
}

// DictionaryNumber is a number naming the stage's dictionary, the same on every call
// (Stage.get_path_dictionary hands it out).
func DictionaryNumber(stageID uint64) (uint64, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (uint64, error) { return d.Number(), nil })
}

// InternToken interns s.
func InternToken(stageID uint64, s string) (uint64, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (uint64, error) { return d.InternToken(s) })
}

// TokenToString returns the string of a token.
func TokenToString(stageID, tok uint64) (string, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (string, error) { return d.TokenString(tok) })
}

// InternPath interns an absolute path string.
func InternPath(stageID uint64, s string) (uint64, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (uint64, error) { return d.InternPath(s) })
}

// PathToString formats a path ("/" for the root).
func PathToString(stageID, p uint64) (string, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (string, error) { return d.PathString(p) })
}

// CreatePathListFromPaths makes a list from uint64[n] path ids at addr.
func CreatePathListFromPaths(stageID uint64, addr uintptr, n int) (uint64, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (uint64, error) {
		return d.CreateList(cptr.Uint64s(addr, n))
	})
}

// CreatePathListFromStrings makes a list from n UTF-8 path strings packed back to back in
// blobLen bytes at blobAddr; their byte lengths are uint64[n] at lensAddr.
func CreatePathListFromStrings(stageID uint64, blobAddr uintptr, blobLen int, lensAddr uintptr, n int) (uint64, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (uint64, error) {
		strs, err := cptr.Strings(blobAddr, blobLen, cptr.Uint64s(lensAddr, n))
		if err != nil {
			return 0, &pathdict.Error{Message: err.Error()}
		}
		return d.CreateListFromStrings(strs)
	})
}

// AddPathListReference adds a reference to a list (0 is a no-op).
func AddPathListReference(stageID, list uint64) (bool, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (bool, error) { return true, d.AddRef(list) })
}

// ReleasePathListReference drops a reference and returns how many remain.
func ReleasePathListReference(stageID, list uint64) (int, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (int, error) { return d.Release(list) })
}

// PathListCount is the number of paths in a list.
func PathListCount(stageID, list uint64) (int, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (int, error) {
		paths, err := d.ListPaths(list)
		return len(paths), err
	})
}

// PathListCopy copies up to max path ids of a list into uint64[max] at out.
func PathListCopy(stageID, list uint64, out uintptr, max int) (int, error) {
	return withDictionary(stageID, func(d *pathdict.Dictionary) (int, error) {
		paths, err := d.ListPaths(list)
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
