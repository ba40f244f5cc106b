package pybind

import "github.com/ovstage-go/ovstage/core"

// Ordinal queries (core/ordinal.go): the retention frontier and write floors.

// GetOldestPreservedOrdinal enqueues a retention-frontier query: "<handle> <op id>".
func GetOldestPreservedOrdinal(stageID uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) { return handleAndOp(s.GetOldestPreservedOrdinal()) })
}

// GetAttributeWriteFloor enqueues a floor query for attr (0: the global floor):
// "<handle> <op id>".
func GetAttributeWriteFloor(stageID, attr uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) { return handleAndOp(s.GetAttributeWriteFloor(attr)) })
}

// FetchOrdinal returns an ordinal query's value once ready.
func FetchOrdinal(stageID, handle, timeoutNs uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.FetchOrdinal(handle, timeoutNs) })
}

// ReleaseOrdinalQuery enqueues the release of an ordinal query handle.
func ReleaseOrdinalQuery(stageID, handle uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.ReleaseOrdinalQuery(handle) })
}
