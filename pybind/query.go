package pybind

import "github.com/ovstage-go/ovstage/core"

// QueryFromPathList wraps a path list as a query handle (synchronous).
func QueryFromPathList(stageID, list uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.QueryFromPathList(list) })
}

// ReleaseQuery enqueues the release of a query handle.
func ReleaseQuery(stageID, query uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.ReleaseQuery(query) })
}
