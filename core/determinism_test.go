package core

// Determinism under conflict ordering: the same op sequence, submitted under different worker
// counts and with the workers held and released at random points (so ops run in different
// orders and sometimes inline), must give every op the same outcome and leave the same sealed
// stage: the same change history per column, the same latest values, the same prims. That is
// the one ordering rule of conflicts.go: outcomes depend on (ordinal, submission order) only.

import (
	"encoding/hex"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

var detPaths = []string{"/d/p0", "/d/p0/c", "/d/p1", "/d/p2", "/d/p3", "/d/p4"}

var detAttrs = []string{"d:a", "d:b"}

type detEntry struct {
	attr    int
	int32   bool // the second schema
	count   uint32
	mask    uint64
	force   bool
	semantc int32
}

type detOp struct {
	kind    string // write, batch, delete, wipe (whole prims), advance, clone
	query   int
	ordinal uint64
	insert  bool
	entries []detEntry
	attrs   []int // deletes
	source  int   // clone
}

type detSeq struct {
	queries [][]int // path indices per query (duplicates allowed)
	ops     []detOp
}

func randomDetSeq(rng *rand.Rand, n int) detSeq {
	var seq detSeq
	for i := 0; i < 5; i++ {
		var q []int
		for k := 1 + rng.Intn(4); k > 0; k-- {
			q = append(q, rng.Intn(len(detPaths)))
		}
		seq.queries = append(seq.queries, q)
	}
	entry := func() detEntry {
		e := detEntry{attr: rng.Intn(len(detAttrs)), int32: rng.Intn(6) == 0, force: rng.Intn(8) == 0}
		if rng.Intn(3) == 0 {
			e.count, e.mask = 4, rng.Uint64()
		}
		if rng.Intn(6) == 0 {
			e.semantc = semanticPoint
		}
		return e
	}
	for i := 0; i < n; i++ {
		op := detOp{query: rng.Intn(len(seq.queries)), ordinal: uint64(1 + rng.Intn(12))}
		switch r := rng.Intn(100); {
		case r < 50:
			op.kind, op.insert, op.entries = "write", rng.Intn(10) == 0, []detEntry{entry()}
		case r < 62:
			op.kind, op.entries = "batch", []detEntry{entry(), entry()}
		case r < 76:
			op.kind = "delete"
			op.attrs = []int{rng.Intn(len(detAttrs))}
		case r < 84:
			op.kind = "wipe"
		case r < 92:
			op.kind, op.ordinal = "advance", uint64(rng.Intn(5))
		default:
			op.kind, op.source = "clone", rng.Intn(len(detPaths))
		}
		seq.ops = append(seq.ops, op)
	}
	return seq
}

// detResult is what a run leaves: op outcomes and the sealed stage.
type detResult struct {
	outcomes []string
	columns  []string // per column: schema and its changes (ordinal, op index, prim, kind)
	latest   []string
	prims    []string
}

func runDetSeq(t *testing.T, seq detSeq, policy AdmissionPolicy, workers int, timing *rand.Rand) detResult {
	s := NewStage("determinism", Config{Workers: workers, Admission: policy})
	defer s.Destroy()
	d := s.Dictionary()
	var queries []uint64
	for _, q := range seq.queries {
		var paths []string
		for _, i := range q {
			paths = append(paths, detPaths[i])
		}
		list, err := d.CreateListFromStrings(paths)
		require.NoError(t, err)
		h, err := s.QueryFromPathList(list)
		require.NoError(t, err)
		_, _ = d.Release(list)
		queries = append(queries, h)
	}
	var keep [][]byte
	payload := func(i, rows int, int32s bool) tensor.Tensor {
		b := make([]byte, 4*rows)
		for r := range rows {
			v := uint32(1000*i + r)
			copy(b[4*r:], unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4))
		}
		keep = append(keep, b)
		dt := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}
		if int32s {
			dt = tensor.DType{Code: tensor.CodeInt, Bits: 32, Lanes: 1}
		}
		return tensor.Tensor{Data: unsafe.Pointer(&b[0]), DeviceType: tensor.DeviceCPU, DType: dt, Shape: []int64{int64(rows)}}
	}
	req := func(i int, e detEntry, n int) WriteRequest {
		rows := n
		r := WriteRequest{AttrName: detAttrs[e.attr], Semantic: e.semantc}
		if e.count > 0 {
			rows = min(n, int(e.count))
			r.Count, r.Mask, r.HasMask = uint32(rows), []uint64{e.mask}, true
		}
		if e.force {
			r.AttributeMode = AttributeModeForce
		}
		r.Tensors = []tensor.Tensor{payload(i, max(rows, 1), e.int32)}
		return r
	}
	var release func()
	defer func() { // before Destroy, if a check failed while the workers were held
		if release != nil {
			release()
		}
	}()
	ids := make([]uint64, len(seq.ops))
	outcomes := make([]string, len(seq.ops))
	for i, op := range seq.ops {
		if release == nil && timing.Intn(3) == 0 {
			release = holdWorkers(s)
		} else if release != nil && timing.Intn(3) == 0 {
			release()
			release = nil
		}
		n := len(seq.queries[op.query])
		var id uint64
		var err error
		q := queries[op.query]
		switch op.kind {
		case "write":
			r := req(i, op.entries[0], n)
			r.Query, r.Ordinal = q, op.ordinal
			if op.insert {
				r.PrimMode = PrimModeInsert
			}
			id, err = s.WriteAttribute(r)
		case "batch":
			id, err = s.WriteAttributes(q, op.ordinal, PrimModeUpsert, []WriteRequest{req(i, op.entries[0], n), req(i, op.entries[1], n)})
		case "delete":
			id, err = s.DeleteAttributes(DeleteRequest{Query: q, Names: []string{detAttrs[op.attrs[0]]}, Tokens: []uint64{0}, Ordinal: op.ordinal})
		case "wipe":
			id, err = s.DeleteAttributes(DeleteRequest{Query: q, Ordinal: op.ordinal})
		case "advance":
			id, err = s.AdvanceWriteFloor(op.ordinal, ScopeAll, nil)
		case "clone":
			id, err = s.Clone(detPaths[op.source], []string{fmt.Sprintf("/d/k%d", i)}, op.ordinal)
		}
		ids[i] = id
		if err != nil {
			outcomes[i] = status.CodeOf(err).String()
		}
	}
	if release != nil {
		release()
		release = nil
	}
	byID := map[uint64]int{}
	for i, id := range ids {
		if id == 0 {
			continue
		}
		byID[id] = i
		res, err := s.WaitOp(id, TimeoutInfinite)
		require.NoError(t, err)
		require.Equal(t, status.OK, res.Status)
		outcomes[i] = "OK"
		if err := s.OpError(id); err != nil {
			outcomes[i] = status.CodeOf(err).String()
		}
	}
	adv, err := s.AdvanceWriteFloor(100, ScopeAll, nil)
	require.NoError(t, err)
	_, err = s.WaitOp(adv, TimeoutInfinite)
	require.NoError(t, err)

	res := detResult{outcomes: outcomes}
	s.mu.Lock()
	for a, cols := range s.columns {
		for _, c := range cols {
			var changes []string
			for _, ch := range c.Changes() {
				kind := "value"
				if ch.Tombstone {
					kind = "tomb"
				}
				changes = append(changes, fmt.Sprintf("%03d/%03d %s %s", ch.Ordinal, byID[ch.Seq], s.pathName(ch.Prim), kind))
			}
			if len(changes) == 0 {
				continue
			}
			sort.Strings(changes)
			res.columns = append(res.columns, fmt.Sprintf("%s %s sem %d: %s", s.tokenName(a), c.Schema.DType, c.Schema.Semantic, strings.Join(changes, ", ")))
		}
	}
	for p := range s.prims.all() {
		res.prims = append(res.prims, s.pathName(p))
	}
	s.mu.Unlock()
	sort.Strings(res.columns)
	sort.Strings(res.prims)

	all := append([]string(nil), detPaths...)
	for i := range seq.ops {
		all = append(all, fmt.Sprintf("/d/k%d", i), fmt.Sprintf("/d/k%d/c", i))
	}
	list, err := d.CreateListFromStrings(all)
	require.NoError(t, err)
	qAll, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = d.Release(list)
	for _, name := range detAttrs {
		tok, err := d.InternToken(name)
		require.NoError(t, err)
		h, op, err := s.ReadAttributes(qAll, []uint64{tok}, OrdinalRange{End: 100})
		require.NoError(t, err)
		_, err = s.WaitOp(op, TimeoutInfinite)
		require.NoError(t, err)
		for {
			g, err := s.FetchReadNext(h, TimeoutInfinite)
			if status.CodeOf(err) == status.EndOfIteration {
				break
			}
			if err != nil {
				res.latest = append(res.latest, name+": "+status.CodeOf(err).String())
				break
			}
			paths, err := d.ListPaths(g.PrimList)
			require.NoError(t, err)
			tv := g.Tensors[0]
			rb := tv.DType.ElemBytes()
			data := tv.Buffer.Bytes()[tv.ByteOffset:]
			for k := 0; k < int(g.PrimCount); k++ {
				idx := int(g.PrimOffset) + k
				if g.PrimIndexMap != nil {
					idx = int(g.PrimIndexMap[k])
				}
				row := k
				if g.DataIndexMap != nil {
					row = int(g.DataIndexMap[k])
				}
				res.latest = append(res.latest, fmt.Sprintf("%s %s %s sem %d = %s", name, s.pathName(paths[idx]), tv.DType, g.Semantic,
					hex.EncodeToString(data[row*rb:(row+1)*rb])))
			}
			require.NoError(t, s.ReleaseGroup(g.ID))
		}
		_, err = s.ReleaseRead(h)
		require.NoError(t, err)
	}
	sort.Strings(res.latest)
	res.latest = slices.Compact(res.latest)
	_ = keep
	return res
}

func TestOutcomesDependOnOrdinalAndSubmissionOrderOnly(t *testing.T) {
	sequences, steps := envInt("OVSTAGE_DETERMINISM_SEQUENCES", 40), 40
	if testing.Short() {
		sequences = 8
	}
	for _, policy := range allPolicies {
		for n := 0; n < sequences; n++ {
			seq := randomDetSeq(rand.New(rand.NewSource(int64(n))), steps)
			want := runDetSeq(t, seq, policy, 1, rand.New(rand.NewSource(0)))
			for run, workers := range []int{1, 2, 3, 8, 8} {
				got := runDetSeq(t, seq, policy, workers, rand.New(rand.NewSource(int64(1000*n+run+1))))
				for i := range seq.ops {
					require.Equal(t, want.outcomes[i], got.outcomes[i], "%s sequence %d, %d workers: op %d (%+v)", policy, n, workers, i, seq.ops[i])
				}
				require.Equal(t, want.columns, got.columns, "%s sequence %d, %d workers: change history", policy, n, workers)
				require.Equal(t, want.latest, got.latest, "%s sequence %d, %d workers: latest values", policy, n, workers)
				require.Equal(t, want.prims, got.prims, "%s sequence %d, %d workers: prims", policy, n, workers)
			}
		}
	}
}
