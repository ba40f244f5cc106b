// Package pybind is the gopy facade over core: flat functions of ints, bools, strings and
// addresses (see API.md). It is the only package handed to gopy. Every function returns
// (T, error), recovers panics, and encodes the status in the error text ("[ovstage:<code>] ..."
// or "[ovx:1] ..." for path-dictionary failures) for python/ovstage/_lib.py to map.
package pybind

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
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
	return fmt.Errorf("[ovstage:%d] %s", int32(status.CodeOf(err)), status.MessageOf(err))
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

func stage(id uint64) (*core.Stage, error) { return core.Lookup(id) }

// LibraryVersion returns the compatibility version "major.minor.patch".
func LibraryVersion() (string, error) {
	v := core.Version
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]), nil
}

// CapsuleDestructorAddress is the C destructor to pass to PyCapsule_New for our exports.
func CapsuleDestructorAddress() (uintptr, error) { return abi.CapsuleDestructorAddress(), nil }

// CreateStage creates a stage; workers <= 0 uses one worker per CPU.
func CreateStage(name string, workers int) (uint64, error) {
	return call(func() (uint64, error) {
		return core.NewStage(name, core.Config{Workers: workers}).ID, nil
	})
}

// DestroyStage waits for the stage's pending ops and releases everything it holds.
func DestroyStage(id uint64) (bool, error) {
	return call(func() (bool, error) {
		s, err := stage(id)
		if err != nil {
			return false, err
		}
		s.Destroy()
		return true, nil
	})
}

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
			copy(unsafeUint64s(out, n), paths[:n])
		}
		return n, nil
	})
}

// QueryFromPathList wraps a path list as a query handle (synchronous).
func QueryFromPathList(stageID, list uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.QueryFromPathList(list)
	})
}

// ReleaseQuery enqueues the release of a query handle.
func ReleaseQuery(stageID, query uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.ReleaseQuery(query)
	})
}

// WriteAttribute enqueues a write. tensorsAddr holds tensorCount DLTensor pointers; count 0
// means the whole query; index map / mask are present when their address is non-zero. The
// column's placement follows the source tensor (see WriteAttributePlaced).
func WriteAttribute(stageID, query, attrToken uint64, attrName string, ordinal uint64,
	tensorsAddr uintptr, tensorCount int, count int64, indexMapAddr uintptr, indexMapLen int,
	maskAddr uintptr, maskLen int, semantic int32, isArray bool, primMode int32) (uint64, error) {
	return WriteAttributePlaced(stageID, query, attrToken, attrName, ordinal, tensorsAddr, tensorCount,
		count, indexMapAddr, indexMapLen, maskAddr, maskLen, semantic, isArray, primMode, 0, 0, 0, 0)
}

// AdvanceWriteFloor enqueues a floor advance over uint64[n] attribute tokens at attrsAddr.
func AdvanceWriteFloor(stageID, ordinal uint64, scope int32, attrsAddr uintptr, n int) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.AdvanceWriteFloor(ordinal, core.Scope(scope), cptr.Uint64s(attrsAddr, n))
	})
}

// ReadAttributes enqueues a read; it returns "<read handle> <op id>".
func ReadAttributes(stageID, query uint64, attrsAddr uintptr, n int, start, end uint64, hasStart bool) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		h, op, err := s.ReadAttributes(query, cptr.Uint64s(attrsAddr, n),
			core.OrdinalRange{Start: start, End: end, HasStart: hasStart})
		if err != nil {
			return "", err
		}
		return strconv.FormatUint(h, 10) + " " + strconv.FormatUint(op, 10), nil
	})
}

// FetchReadNext returns the address of the next group's ovstage_read_group_t.
func FetchReadNext(stageID, read, timeoutNs uint64) (uintptr, error) {
	return call(func() (uintptr, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		g, err := s.FetchReadNext(read, timeoutNs)
		if err != nil {
			return 0, err
		}
		block, err := abi.NewReadGroup(g)
		if err != nil {
			_ = s.ReleaseGroup(g.ID)
			return 0, err
		}
		g.SetOnRelease(block.Free)
		return uintptr(block.Ptr()), nil
	})
}

// ReleaseGroup releases a fetched group.
func ReleaseGroup(stageID, group uint64) (bool, error) {
	return call(func() (bool, error) {
		s, err := stage(stageID)
		if err != nil {
			return false, err
		}
		return true, s.ReleaseGroup(group)
	})
}

// ReleaseRead enqueues the release of a read handle.
func ReleaseRead(stageID, read uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.ReleaseRead(read)
	})
}

// ExportGroupTensor exports tensor index of a group as a DLManagedTensorVersioned* holding its
// own buffer reference (valid after the group and the stage are gone). A writable export of a
// read group is a private copy (flagged IS_COPIED): sealed data never changes.
func ExportGroupTensor(stageID, group uint64, index int, readonly bool) (uintptr, error) {
	return call(func() (uintptr, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		tv, copied, err := s.ExportView(group, index, !readonly)
		if err != nil {
			return 0, err
		}
		defer tv.Buffer.Release()
		var flags abi.Flags
		if readonly {
			flags |= abi.ReadOnly
		}
		if copied {
			flags |= abi.IsCopied
		}
		return abi.Export(tv.Buffer, tv.ByteOffset, tv.DType, tv.Rows, tv.DeviceType, tv.DeviceID, flags)
	})
}

// ManagedToCapsulePointer makes a fresh managed tensor (versioned or legacy) sharing the storage
// of an export, for exactly one capsule.
func ManagedToCapsulePointer(addr uintptr, versioned bool) (uintptr, error) {
	return call(func() (uintptr, error) { return abi.CloneForCapsule(addr, versioned) })
}

// ManagedFree runs the deleter of an export made by ExportGroupTensor.
func ManagedFree(addr uintptr) (bool, error) {
	return call(func() (bool, error) { abi.FreeExport(addr); return true, nil })
}

// WaitOp waits for an op and its chain; it returns "<status> <lowest pending> <failed ids>
// <root cause message>" (the message last: it may contain spaces; empty without a failure).
func WaitOp(stageID, op, timeoutNs uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		res, err := s.WaitOp(op, timeoutNs)
		if err != nil {
			return "", err
		}
		ids := make([]string, len(res.ErrorOpIDs))
		for i, id := range res.ErrorOpIDs {
			ids[i] = strconv.FormatUint(id, 10)
		}
		return fmt.Sprintf("%d %d %s %s", int32(res.Status), res.LowestPending, strings.Join(ids, ","), res.Message), nil
	})
}

// ReleaseOp forgets an op id; it returns the status code (0 on success).
func ReleaseOp(stageID, op uint64) (int, error) {
	return call(func() (int, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return 0, s.ReleaseOp(op)
	})
}

// DetachOp says nobody will wait for an op any more: its id is forgotten once the op
// completes (at once if it has). The Python layer calls it when an unwaited Operation is
// garbage-collected; it returns true.
func DetachOp(stageID, op uint64) (bool, error) {
	return call(func() (bool, error) {
		s, err := stage(stageID)
		if err != nil {
			return false, err
		}
		return true, s.DetachOp(op)
	})
}

// TakeSourcesDone returns the ids of finished writes whose source the caller kept alive
// (payloads of DeferCopyBytes or more), comma-separated ("" when none), and forgets them.
func TakeSourcesDone(stageID uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		ids := s.TakeSourcesDone()
		if len(ids) == 0 {
			return "", nil
		}
		buf := make([]byte, 0, 8*len(ids))
		for i, id := range ids {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendUint(buf, id, 10)
		}
		return string(buf), nil
	})
}

// GetLastOpError is the failure message of an op ("" when it did not fail or is unknown).
func GetLastOpError(stageID, op uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		return s.LastOpError(op), nil
	})
}

// GlobalWriteFloor is the reported global floor (minimum over known attributes).
func GlobalWriteFloor(stageID uint64) (uint64, error) {
	return call(func() (uint64, error) {
		s, err := stage(stageID)
		if err != nil {
			return 0, err
		}
		return s.GlobalFloor(), nil
	})
}

// Diagnostics returns live object counts: "ops queries reads groups columns buffers
// ordinal_queries maps path_lists" (buffers and path lists are process-wide).
func Diagnostics(stageID uint64) (string, error) {
	return call(func() (string, error) {
		s, err := stage(stageID)
		if err != nil {
			return "", err
		}
		d := s.Diagnostics()
		return fmt.Sprintf("%d %d %d %d %d %d %d %d %d", d.Ops, d.Queries, d.Reads, d.Groups, d.Columns,
			buffer.LiveCount(), d.OrdinalQueries, d.Maps, pathdict.Global().LiveLists()), nil
	})
}
