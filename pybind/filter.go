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

// FetchQueryResult returns "<total prim count> <token>,<token>,...".
func FetchQueryResult(stageID, query, timeoutNs uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		res, err := s.FetchQueryResult(query, timeoutNs)
		if err != nil {
			return "", err
		}
		toks := make([]string, len(res.Attributes))
		for i, t := range res.Attributes {
			toks[i] = strconv.FormatUint(t, 10)
		}
		return strconv.Itoa(res.TotalPrimCount) + " " + strings.Join(toks, ","), nil
	})
}
