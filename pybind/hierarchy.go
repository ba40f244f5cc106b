package pybind

import (
	"encoding/json"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/pathdict"
)

// GetHierarchy enqueues a hierarchy query over a path list (copied now): "<handle> <op id>".
// relation: PARENT 0, CHILDREN 1, SIBLINGS 2 (else [ovstage:1]).
func GetHierarchy(stageID, list, ordinal uint64, relation int32) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		return handleAndOp(s.GetHierarchy(list, ordinal, relation))
	})
}

type hierarchyItemJSON struct {
	Status int32    `json:"status"`
	Paths  []string `json:"paths"`
}

type hierarchyResultJSON struct {
	Ordinal uint64              `json:"ordinal"`
	Items   []hierarchyItemJSON `json:"items"`
}

// FetchHierarchyResult waits up to timeoutNs for a hierarchy handle and returns its result as
// JSON {"ordinal": n, "items": [{"status": code, "paths": ["/a", ...]}, ...]}.
func FetchHierarchyResult(stageID, handle, timeoutNs uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		res, err := s.FetchHierarchyResult(handle, timeoutNs)
		if err != nil {
			return "", err
		}
		dict := pathdict.Global()
		out := hierarchyResultJSON{Ordinal: res.Ordinal, Items: make([]hierarchyItemJSON, len(res.Items))}
		for i, it := range res.Items {
			item := hierarchyItemJSON{Status: int32(it.Status), Paths: make([]string, len(it.Paths))}
			for k, p := range it.Paths {
				if item.Paths[k], err = dict.PathString(p); err != nil {
					return "", err
				}
			}
			out.Items[i] = item
		}
		b, err := json.Marshal(out)
		return string(b), err
	})
}

// ReleaseHierarchy enqueues the release of a hierarchy handle.
func ReleaseHierarchy(stageID, handle uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		return s.ReleaseHierarchy(handle)
	})
}

type hierarchyModelJSON struct {
	ID          int32  `json:"model_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// HierarchyComputationModels lists the advertised models as JSON
// [{"model_id": 1, "name": "...", "description": "..."}].
func HierarchyComputationModels(stageID uint64) (string, error) {
	return withStage(stageID, func(*core.Stage) (string, error) {
		var out []hierarchyModelJSON
		for _, m := range core.HierarchyModels() {
			out = append(out, hierarchyModelJSON{m.ID, m.Name, m.Description})
		}
		b, err := json.Marshal(out)
		return string(b), err
	})
}

// ComputeHierarchy enqueues the world-matrix computation of a model at outputOrdinal.
func ComputeHierarchy(stageID uint64, model int32, inputOrdinal, outputOrdinal uint64) (uint64, error) {
	return withStage(stageID, func(s *core.Stage) (uint64, error) {
		return s.ComputeHierarchy(model, inputOrdinal, outputOrdinal)
	})
}
