package pybind

import (
	"strconv"
	"strings"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/internal/cptr"
)

// Query enqueues a filter query: filter is an ovstage_filter_t* (0: every prim), decoded by
// abi.Filter; n attribute tokens (uint64) at attrs scope attribute discovery when scoped (an
// empty scope discovers nothing; unscoped, every attribute). Returns "<query handle> <op id>".
func Query(stageID uint64, filter, attrs uintptr, n int, scoped bool) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		preds, err := abi.Filter(cptr.At(filter), s.Dictionary())
		if err != nil {
			return "", err
		}
		toks, err := abi.Tokens(cptr.At(attrs), uint64(max(n, 0)), "attrs")
		if err != nil {
			return "", err
		}
		if scoped && toks == nil {
			toks = []uint64{}
		}
		return handleAndOp(s.Query(preds, toks))
	})
}

// queryResults keeps the fetched query results until Python releases them.
var queryResults abi.Results

// FetchQueryResult waits up to timeoutNs for a query's result and returns the address of its
// ovstage_query_result_t (abi.NewQueryResult), kept until ReleaseQueryResult.
func FetchQueryResult(stageID, query, timeoutNs uint64) (uintptr, error) {
	return withStage(stageID, func(s *core.Stage) (uintptr, error) {
		res, err := s.FetchQueryResult(query, timeoutNs)
		if err != nil {
			return 0, err
		}
		b, err := queryResults.KeepQueryResult(query, res)
		return uintptr(b.Ptr()), err
	})
}

// ReleaseQueryResult frees the result of id (its query_result_id) returned by FetchQueryResult.
func ReleaseQueryResult(id uint64) (bool, error) {
	return call(func() (bool, error) { return releaseResult(&queryResults, id) })
}

// PrimsHolding is core.Stage.PrimsHolding: the path ids of the prims holding attribute token
// attr in a column of semantic, space-separated ("" when none).
func PrimsHolding(stageID, attr uint64, semantic int32) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		prims, err := s.PrimsHolding(attr, semantic)
		if err != nil {
			return "", err
		}
		words := make([]string, len(prims))
		for i, p := range prims {
			words[i] = strconv.FormatUint(p, 10)
		}
		return strings.Join(words, " "), nil
	})
}
