package pybind

import (
	"strconv"
	"sync"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
)

// hierarchyResults keeps the fetched hierarchy results until Python releases them.
var hierarchyResults abi.Results

// GetHierarchy enqueues a hierarchy query over a path list (copied now): "<handle> <op id>".
// relation: PARENT 0, CHILDREN 1, SIBLINGS 2 (else [ovstage:1]).
func GetHierarchy(stageID, list, ordinal uint64, relation int32) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		return handleAndOp(s.GetHierarchy(list, ordinal, relation))
	})
}

// FetchHierarchyResult waits up to timeoutNs for a hierarchy handle and returns the address of
// its ovstage_hierarchy_result_t (abi.NewHierarchyResult: paths as NUL-terminated strings),
// kept until ReleaseHierarchyResult (read its id before).
func FetchHierarchyResult(stageID, handle, timeoutNs uint64) (uintptr, error) {
	return withStage(stageID, func(s *core.Stage) (uintptr, error) {
		res, err := s.FetchHierarchyResult(handle, timeoutNs)
		if err != nil {
			return 0, err
		}
		b, err := hierarchyResults.KeepHierarchyResult(res, s.Dictionary())
		return uintptr(b.Ptr()), err
	})
}

// ReleaseHierarchyResult frees the result of id (its hierarchy_result_id) returned by
// FetchHierarchyResult.
func ReleaseHierarchyResult(id uint64) (bool, error) {
	return call(func() (bool, error) { return releaseResult(&hierarchyResults, id) })
}

// releaseResult frees the result of id kept in results; INVALID_HANDLE when there is none.
func releaseResult(results *abi.Results, id uint64) (bool, error) {
	if !results.Release(id) {
		return false, status.Errorf(status.InvalidHandle, "result %d is not a fetched, unreleased result", id)
	}
	return true, nil
}

// ReleaseHierarchy enqueues the release of a hierarchy handle.
func ReleaseHierarchy(stageID, handle uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) { return s.ReleaseHierarchy(handle) })
}

// hierarchyModels is the ovstage_hierarchy_computation_model_desc_t array of the advertised
// models, laid out once (they never change) and kept for the process.
var hierarchyModels = sync.OnceValues(func() (abi.Block, error) { return abi.NewHierarchyModels(core.HierarchyModels()) })

// HierarchyComputationModels returns "<address> <count>" of the advertised models'
// ovstage_hierarchy_computation_model_desc_t array (kept for the process: never free it).
func HierarchyComputationModels(stageID uint64) (string, error) {
	return withStage(stageID, func(*core.Stage) (string, error) {
		b, err := hierarchyModels()
		if err != nil {
			return "", err
		}
		return strconv.FormatUint(uint64(uintptr(b.Ptr())), 10) + " " + strconv.Itoa(len(core.HierarchyModels())), nil
	})
}

// ComputeHierarchy enqueues the world-matrix computation of a model at outputOrdinal.
func ComputeHierarchy(stageID uint64, model int32, inputOrdinal, outputOrdinal uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		return s.ComputeHierarchy(model, inputOrdinal, outputOrdinal)
	})
}
