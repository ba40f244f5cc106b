package core

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// FilterOp is a predicate operator.
type FilterOp int32

// Filter operators.
const (
	OpHas      FilterOp = 0
	OpIn       FilterOp = 1
	OpContains FilterOp = 2
	OpPrefix   FilterOp = 3
	OpLT       FilterOp = 4
	OpLE       FilterOp = 5
	OpGT       FilterOp = 6
	OpGE       FilterOp = 7
)

var opNames = [...]string{"HAS", "IN", "CONTAINS", "PREFIX", "LT", "LE", "GT", "GE"}

func (o FilterOp) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "op" + strconv.Itoa(int(o))
}

func (o FilterOp) comparison() bool { return o >= OpLT && o <= OpGE }

// Predicate is one ANDed condition; its values are ORed alternatives, always strings.
type Predicate struct {
	Attr   uint64
	Op     FilterOp
	Values []string
}

// builtinOps is the support matrix of the built-ins; user attributes get HAS plus,
// beyond the reference, IN/LT/LE/GT/GE on numeric and token values and PREFIX on tokens.
var builtinOps = map[string][]FilterOp{
	BuiltinPath:     {OpHas, OpIn, OpPrefix},
	BuiltinParent:   {OpHas, OpIn},
	BuiltinChildren: {OpHas, OpContains},
	BuiltinPrimType: {OpHas, OpIn, OpPrefix, OpLT, OpLE, OpGT, OpGE},
	BuiltinSchemas:  {OpHas, OpContains},
	// usd-ancestor-types: a token-id array like usd-schemas.
	BuiltinAncestorTypes: {OpHas, OpContains},
}

func (s *Stage) checkPredicate(i int, p Predicate) error {
	name := s.tokenName(p.Attr)
	if p.Op < OpHas || p.Op > OpGE {
		return status.Errorf(status.InvalidArgument, "filter predicate %d: operator %d is not a FilterOp (0..7)", i, p.Op)
	}
	if name == BuiltinActive {
		return status.Errorf(status.NotSupported, "filter predicate %d: %q is not supported", i, name)
	}
	if ops, builtin := builtinOps[name]; builtin {
		if !slices.Contains(ops, p.Op) {
			return status.Errorf(status.NotSupported, "filter predicate %d: %s is not supported on %q", i, p.Op, name)
		}
	} else if p.Op == OpContains {
		return status.Errorf(status.NotSupported, "filter predicate %d: CONTAINS is supported on usd-children, usd-schemas and usd-ancestor-types only, not on %q", i, name)
	}
	if p.Op.comparison() && len(p.Values) != 1 {
		return status.Errorf(status.InvalidArgument, "filter predicate %d: %s takes exactly one value, got %d", i, p.Op, len(p.Values))
	}
	if p.Op != OpHas && len(p.Values) == 0 {
		return status.Errorf(status.InvalidArgument, "filter predicate %d: %s needs at least one value", i, p.Op)
	}
	if p.Op == OpIn && (name == BuiltinPath || name == BuiltinParent) {
		// IN compares whole paths: a malformed one could never match (PREFIX compares bytes,
		// where a trailing "/" has a meaning).
		for j, v := range p.Values {
			if _, err := pathdict.ParsePath(v); err != nil {
				return status.Errorf(status.InvalidArgument, "filter predicate %d: values[%d] is not a prim path: %v", i, j, err)
			}
		}
	}
	return nil
}

// Query enqueues a filter query: predicates are ANDed and evaluated at execution time against
// the committed (executed, not necessarily sealed) state; attrs (nil: all) scopes attribute
// discovery. It returns the query handle (usable at once) and the op id.
func (s *Stage) Query(preds []Predicate, attrs []uint64) (uint64, uint64, error) {
	for i, p := range preds {
		if !s.validToken(p.Attr) {
			return 0, 0, InvalidToken(fmt.Sprintf("filter predicate %d attribute", i), p.Attr)
		}
		if err := s.checkPredicate(i, p); err != nil {
			return 0, 0, err
		}
	}
	for i, a := range attrs {
		if !s.validToken(a) {
			return 0, 0, InvalidToken(fmt.Sprintf("attrs[%d]", i), a)
		}
	}
	// Aliases match and discover their storage columns (aliases.go).
	preds = slices.Clone(preds)
	for i := range preds {
		preds[i].Attr = s.canonicalAttr(preds[i].Attr)
	}
	if len(attrs) > 0 {
		attrs = s.canonicalAttrs(attrs)
		// A scoped discovery also reports the attributes the predicates name (as the
		// reference does), so the result says which of them the matched prims carry.
		for _, p := range preds {
			attrs = append(attrs, p.Attr)
		}
	}
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, 0, err
	}
	q := &Query{Handle: newHandle(), selections: map[*column.Column]*column.Selection{}}
	q.Producer = s.enqueueLocked(opSpec{gate: QueryGate, run: func(*sched.Op) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.checkLiveLocked(); err != nil {
			return err
		}
		injectFault(faultQueryApply)
		matched, err := s.evaluateLocked(preds)
		if err != nil {
			return err
		}
		list, err := s.dict.CreateList(matched)
		if err != nil {
			return status.Errorf(status.Internal, "query path list: %v", err)
		}
		q.List, q.Paths = list, matched
		q.attributes = s.discoverLocked(matched, attrs)
		return nil
	}})
	s.queries[q.Handle] = q
	return q.Handle, q.Producer.ID, nil
}

// evaluateLocked returns the held prims (by path id) matching every predicate.
func (s *Stage) evaluateLocked(preds []Predicate) ([]uint64, error) {
	prims := make([]uint64, 0, s.prims.len())
	for p := range s.prims.all() {
		prims = append(prims, p)
	}
	slices.Sort(prims)
	for i, p := range preds {
		keep, err := s.matchLocked(i, p, prims)
		if err != nil {
			return nil, err
		}
		out := prims[:0]
		for k, ok := range keep {
			if ok {
				out = append(out, prims[k])
			}
		}
		prims = out
	}
	return prims, nil
}

// matchLocked evaluates one predicate over prims.
func (s *Stage) matchLocked(i int, p Predicate, prims []uint64) ([]bool, error) {
	keep := make([]bool, len(prims))
	name := s.tokenName(p.Attr)
	switch name {
	case BuiltinPath, BuiltinParent, BuiltinChildren:
		s.matchDerivedLocked(name, p, prims, keep)
		return keep, nil
	}
	var err error
	for _, c := range s.columns[p.Attr] {
		if err != nil {
			break
		}
		if p.Op == OpHas {
			c.Committed(prims, func(k int, _ []byte) { keep[k] = true })
			continue
		}
		var match func(value []byte) (bool, error)
		match, err = s.valueMatcher(i, p, name, c)
		if err != nil {
			break
		}
		c.Committed(prims, func(k int, value []byte) {
			if err == nil && !keep[k] {
				keep[k], err = match(value)
			}
		})
	}
	return keep, err
}

func (s *Stage) matchDerivedLocked(name string, p Predicate, prims []uint64, keep []bool) {
	paths := map[uint64]bool{}
	for _, v := range p.Values {
		if id, err := s.dict.InternPath(v); err == nil {
			paths[id] = true
		}
	}
	for k, prim := range prims {
		parent := s.dict.Parent(prim)
		hasParent := parent != 0 && parent != s.dict.Root()
		switch {
		case name == BuiltinPath && p.Op == OpHas:
			keep[k] = true
		case name == BuiltinPath && p.Op == OpIn:
			keep[k] = paths[prim]
		case name == BuiltinPath && p.Op == OpPrefix:
			str := s.pathName(prim)
			for _, v := range p.Values {
				if strings.HasPrefix(str, v) {
					keep[k] = true
				}
			}
		case name == BuiltinParent && p.Op == OpHas:
			keep[k] = hasParent
		case name == BuiltinParent && p.Op == OpIn:
			keep[k] = hasParent && paths[parent]
		case name == BuiltinChildren && p.Op == OpHas:
			keep[k] = len(s.childrenLocked(prim)) > 0
		case name == BuiltinChildren && p.Op == OpContains:
			for child := range s.childrenLocked(prim) {
				if paths[child] {
					keep[k] = true
				}
			}
		}
	}
}

// valueMatcher compares a column's committed values with the predicate: token columns (token
// ids: TOKEN_ID semantic or the recorded built-ins) by their strings, numeric
// one-lane columns numerically.
func (s *Stage) valueMatcher(i int, p Predicate, name string, c *column.Column) (func([]byte) (bool, error), error) {
	dt := c.Schema.DType
	tokens := isTokenBuiltin(name) || c.Schema.Semantic == SemanticTokenID
	if tokens && dt.Code == tensor.CodeUInt && dt.Bits == 64 && dt.Lanes == 1 {
		return func(value []byte) (bool, error) {
			for off := 0; off+8 <= len(value); off += 8 {
				str, err := s.dict.TokenString(binary.LittleEndian.Uint64(value[off:]))
				if err == nil && matchString(p, str) {
					return true, nil
				}
			}
			return false, nil
		}, nil
	}
	if p.Op == OpPrefix {
		return nil, status.Errorf(status.NotSupported,
			"filter predicate %d: PREFIX compares strings; %q holds %s values, not tokens (TOKEN_ID)", i, name, dt)
	}
	if c.Schema.IsArray || dt.Lanes != 1 {
		return nil, status.Errorf(status.NotSupported,
			"filter predicate %d: %s on %q needs one-lane numeric or token values; the column holds %s (is_array=%v)",
			i, p.Op, name, dt, c.Schema.IsArray)
	}
	want := make([]float64, len(p.Values))
	for k, v := range p.Values {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, status.Errorf(status.InvalidArgument, "filter predicate %d: value %q is not a number (attribute %q is numeric)", i, v, name)
		}
		want[k] = f
	}
	return func(value []byte) (bool, error) {
		got := decodeNumber(dt, value)
		for _, w := range want {
			if compareMatches(p.Op, cmpFloat(got, w)) {
				return true, nil
			}
		}
		return false, nil
	}, nil
}

func matchString(p Predicate, str string) bool {
	for _, v := range p.Values {
		switch p.Op {
		case OpIn, OpContains:
			if str == v {
				return true
			}
		case OpPrefix:
			if strings.HasPrefix(str, v) {
				return true
			}
		default:
			if compareMatches(p.Op, strings.Compare(str, v)) {
				return true
			}
		}
	}
	return false
}

func compareMatches(op FilterOp, cmp int) bool {
	switch op {
	case OpIn:
		return cmp == 0
	case OpLT:
		return cmp < 0
	case OpLE:
		return cmp <= 0
	case OpGT:
		return cmp > 0
	case OpGE:
		return cmp >= 0
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decodeNumber reads one little-endian value of dt as float64.
func decodeNumber(dt tensor.DType, b []byte) float64 {
	switch dt.Code {
	case tensor.CodeFloat:
		switch dt.Bits {
		case 16:
			return float64(halfToFloat(binary.LittleEndian.Uint16(b)))
		case 32:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case 64:
			return math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	case tensor.CodeBfloat:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	case tensor.CodeInt:
		switch dt.Bits {
		case 8:
			return float64(int8(b[0]))
		case 16:
			return float64(int16(binary.LittleEndian.Uint16(b)))
		case 32:
			return float64(int32(binary.LittleEndian.Uint32(b)))
		case 64:
			return float64(int64(binary.LittleEndian.Uint64(b)))
		}
	case tensor.CodeUInt, tensor.CodeBool:
		switch dt.Bits {
		case 8:
			return float64(b[0])
		case 16:
			return float64(binary.LittleEndian.Uint16(b))
		case 32:
			return float64(binary.LittleEndian.Uint32(b))
		case 64:
			return float64(binary.LittleEndian.Uint64(b))
		}
	}
	return math.NaN()
}

// halfToFloat converts IEEE 754 binary16 bits to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		return float32(math.Ldexp(float64(frac), -24)) * float32(1-2*int(h>>15))
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// discoverLocked lists the recorded attributes (scoped to attrs when given) that some of the
// matched prims carry, in token order. Derived built-ins are never reported.
func (s *Stage) discoverLocked(matched []uint64, attrs []uint64) []uint64 {
	var out []uint64
	for a, cols := range s.columns {
		if attrs != nil && !slices.Contains(attrs, a) {
			continue
		}
		for _, c := range cols {
			found := false
			c.Committed(matched, func(int, []byte) { found = true })
			if found {
				out = append(out, a)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// PrimsHolding lists (in no particular order) the prims whose committed state carries attr
// (an alias reads its storage column) in a column of the given semantic. Population asks it
// which string properties the stage already holds as STRING rows (docs/population.md).
func (s *Stage) PrimsHolding(attr uint64, semantic int32) ([]uint64, error) {
	if !s.validToken(attr) {
		return nil, InvalidToken("attribute", attr)
	}
	attr = s.canonicalAttr(attr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	var out []uint64
	for _, c := range s.columns[attr] {
		if c.Schema.Semantic == semantic {
			out = append(out, c.LivePrims()...)
		}
	}
	return out, nil
}

// QueryResult is what fetch_query_result reports.
type QueryResult struct {
	Attributes     []uint64
	TotalPrimCount int
}

// FetchQueryResult waits for a query and returns its discovered attributes and prim count.
func (s *Stage) FetchQueryResult(h, timeoutNs uint64) (QueryResult, error) {
	q, err := locked(s, func() (*Query, error) { return s.queryLocked(h) })
	if err != nil {
		return QueryResult{}, err
	}
	if q.Producer != nil {
		if err := awaitResult(q.Producer, timeoutNs, "query", h); err != nil {
			return QueryResult{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		return QueryResult{}, err
	}
	attrs := q.attributes
	if q.Producer == nil { // a path-list query: discover on demand
		attrs = s.discoverLocked(q.Paths, nil)
	}
	return QueryResult{Attributes: append([]uint64(nil), attrs...), TotalPrimCount: len(q.Paths)}, nil
}
