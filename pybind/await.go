package pybind

import "github.com/ovstage-go/ovstage/core"

// AwaitHandle waits up to timeoutNs for the result of a handle of the given kind ("read",
// "map", "query", "ordinal_query", "hierarchy") without fetching it: true once it is ready,
// false on timeout. Python waits here in short slices so Ctrl-C stays responsive, then
// fetches with timeout 0.
func AwaitHandle(stageID uint64, kind string, handle, timeoutNs uint64) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) {
		return s.AwaitHandle(core.HandleKind(kind), handle, timeoutNs)
	})
}
