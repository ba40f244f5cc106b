package replication

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// visible is an attribute -> path -> value-bytes map of the latest sealed values.
type visible map[string]map[string]string

func (v visible) clone() visible {
	out := visible{}
	for a, m := range v {
		out[a] = map[string]string{}
		for p, b := range m {
			out[a][p] = b
		}
	}
	return out
}

func (v visible) set(a, p, b string) {
	if v[a] == nil {
		v[a] = map[string]string{}
	}
	v[a][p] = b
}

// follow accumulates what each advance of s seals into a visible state, kept per floor.
func follow(t *testing.T, s *core.Stage) func(uint64) (visible, bool) {
	var mu sync.Mutex
	cur := visible{}
	at := map[uint64]visible{}
	detach, err := s.ObserveAdvances(func(a core.SealedAdvance) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range a.Columns {
			elem := int64(c.DType.ElemBytes())
			off, l := int64(0), 0
			for i, p := range c.Paths {
				if c.Deleted[i] {
					delete(cur[c.Attribute], p)
					continue
				}
				n := elem
				if c.IsArray {
					n = c.Lengths[l] * elem
					l++
				}
				cur.set(c.Attribute, p, string(c.Values[off:off+n]))
				off += n
			}
		}
		at[a.Ordinal] = cur.clone()
	})
	require.NoError(t, err)
	t.Cleanup(detach)
	return func(o uint64) (visible, bool) {
		mu.Lock()
		defer mu.Unlock()
		v, ok := at[o]
		return v, ok
	}
}

// mirrorOf starts a replica of name on url into a new stage, following what it seals.
func mirrorOf(t *testing.T, url, name string) (func(uint64) (visible, bool), *Replica) {
	t.Helper()
	_, seen, rep := newMirror(t, url, name)
	return seen, rep
}

// newMirror is mirrorOf with the replica's stage.
func newMirror(t *testing.T, url, name string) (*core.Stage, func(uint64) (visible, bool), *Replica) {
	t.Helper()
	mirror := core.NewStage(name, core.Config{})
	t.Cleanup(mirror.Destroy)
	seen := follow(t, mirror)
	rep, err := StartReplica(mirror, url, name)
	require.NoError(t, err)
	t.Cleanup(rep.Close) // before the stage's Destroy (cleanups run last first)
	return mirror, seen, rep
}

func hostF32(vals []float32) []tensor.Tensor {
	return []tensor.Tensor{{Data: unsafe.Pointer(&vals[0]), DeviceType: tensor.DeviceCPU, DType: f32, Shape: []int64{int64(len(vals))}}}
}

func must(t *testing.T, s *core.Stage, op uint64, err error) {
	t.Helper()
	require.NoError(t, err)
	res, err := s.WaitOp(op, core.TimeoutInfinite)
	require.NoError(t, err)
	require.Equal(t, status.OK, res.Status, s.LastOpError(op))
}

func queryOf(t *testing.T, s *core.Stage, paths []string) uint64 {
	t.Helper()
	list, err := s.Dictionary().CreateListFromStrings(paths)
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = s.Dictionary().Release(list)
	return q
}

func bytesOf(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

var f32 = tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 1}

// writeAndSeal writes x = v to the prims of q at ordinal o and advances every floor to o.
func writeAndSeal(t *testing.T, s *core.Stage, q, o uint64, v float32) {
	t.Helper()
	op, err := s.WriteAttribute(core.WriteRequest{Query: q, AttrName: "x", Ordinal: o, Tensors: hostF32([]float32{v})})
	must(t, s, op, err)
	op, err = s.AdvanceWriteFloor(o, core.ScopeAll, nil)
	must(t, s, op, err)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaSealsWhatThePrimarySealed drives random sparse fixed and ragged writes and
// deletes on a primary published through the embedded server; at every floor the replica's
// sealed values equal a model of the primary's.
func TestReplicaSealsWhatThePrimarySealed(t *testing.T) {
	primary := core.NewStage("prim", core.Config{})
	t.Cleanup(primary.Destroy)
	pub, err := Publish(primary, PublishOptions{StorageDir: t.TempDir()})
	require.NoError(t, err)
	defer pub.Close()

	seen, rep := mirrorOf(t, pub.URL(), "prim")

	const last = 30
	states := randomAdvances(t, primary, rand.New(rand.NewPCG(1, 2)), visible{}, 1, last)
	waitFor(t, "the replica to apply every advance", func() bool { return rep.Status().Ordinal == last })
	requireSealed(t, states, seen, 1, last)
	st := rep.Status()
	require.Equal(t, uint64(last), st.PrimaryOrdinal)
	require.Zero(t, st.LagOrdinals)
	require.Empty(t, st.LastError)
	ps := pub.Status()
	require.Equal(t, uint64(last), ps.Ordinal)
	require.Zero(t, ps.Dropped)
}

// randomAdvances drives random sparse fixed ("temp") and ragged ("pts") writes and deletes
// of 24 prims on s at ordinals first..last, advancing every floor after each; it updates
// model (the sealed values) and returns it as it was at each of those floors.
func randomAdvances(t *testing.T, s *core.Stage, rng *rand.Rand, model visible, first, last uint64) map[uint64]visible {
	t.Helper()
	var paths []string
	for i := range 24 {
		paths = append(paths, "/World/p"+string(rune('a'+i)))
	}
	states := map[uint64]visible{}
	for o := first; o <= last; o++ {
		for _, attr := range []string{"temp", "pts"} {
			var pick []string
			for _, p := range paths {
				if rng.IntN(3) == 0 {
					pick = append(pick, p)
				}
			}
			if len(pick) == 0 {
				continue
			}
			q := queryOf(t, s, pick)
			if rng.IntN(4) == 0 && o > 1 {
				tok, _ := s.Dictionary().InternToken(attr)
				op, err := s.DeleteAttributes(core.DeleteRequest{Query: q, Tokens: []uint64{tok}, Ordinal: o})
				must(t, s, op, err)
				for _, p := range pick {
					delete(model[attr], p)
				}
				continue
			}
			var ts []tensor.Tensor
			flat := make([]float32, len(pick))
			for i, p := range pick {
				if attr == "temp" {
					flat[i] = rng.Float32()
					model.set(attr, p, string(bytesOf(flat[i:i+1])))
					continue
				}
				row := make([]float32, rng.IntN(4)+1)
				for k := range row {
					row[k] = rng.Float32()
				}
				ts = append(ts, tensor.Tensor{Data: unsafe.Pointer(&row[0]), DeviceType: tensor.DeviceCPU, DType: f32, Shape: []int64{int64(len(row))}})
				model.set(attr, p, string(bytesOf(row)))
			}
			if attr == "temp" {
				ts = []tensor.Tensor{{Data: unsafe.Pointer(&flat[0]), DeviceType: tensor.DeviceCPU, DType: f32, Shape: []int64{int64(len(flat))}}}
			}
			op, err := s.WriteAttribute(core.WriteRequest{Query: q, AttrName: attr, Ordinal: o, Tensors: ts, IsArray: attr == "pts"})
			must(t, s, op, err)
		}
		op, err := s.AdvanceWriteFloor(o, core.ScopeAll, nil)
		must(t, s, op, err)
		states[o] = model.clone()
	}
	return states
}

// requireSealed checks that the replica sealed the model's values at each floor first..last.
func requireSealed(t *testing.T, states map[uint64]visible, seen func(uint64) (visible, bool), first, last uint64) {
	t.Helper()
	for o := first; o <= last; o++ {
		got, ok := seen(o)
		require.True(t, ok, "replica advanced to %d", o)
		require.Equal(t, nonEmpty(states[o]), nonEmpty(got), "sealed values at %d", o)
	}
}

// nonEmpty is v without attributes that hold no values.
func nonEmpty(v visible) visible {
	out := visible{}
	for a, m := range v {
		if len(m) > 0 {
			out[a] = m
		}
	}
	return out
}

// TestStageNameClashAndMissingStream: a second publisher of a name is refused while the first
// holds it, a replica of an unpublished name is refused, and an unreachable server is an
// error within the connect timeout.
func TestStageNameClashAndMissingStream(t *testing.T) {
	a := core.NewStage("clash", core.Config{})
	t.Cleanup(a.Destroy)
	pub, err := Publish(a, PublishOptions{})
	require.NoError(t, err)
	defer pub.Close()
	b := core.NewStage("clash", core.Config{})
	t.Cleanup(b.Destroy)
	_, err = Publish(b, PublishOptions{URL: pub.URL()})
	require.ErrorContains(t, err, "already published")
	_, err = StartReplica(b, pub.URL(), "nobody")
	require.ErrorContains(t, err, `no stage "nobody" is published`)

	start := time.Now()
	_, err = Publish(b, PublishOptions{URL: "nats://127.0.0.1:1"})
	require.ErrorContains(t, err, "cannot reach a NATS server")
	require.Less(t, time.Since(start), 10*time.Second)
	_, err = Publish(b, PublishOptions{URL: "http://127.0.0.1:1"})
	require.ErrorContains(t, err, "scheme")
}

// TestEmbeddedStorageSurvivesRestart: a stream written through an embedded server is there
// again when a new embedded server opens the same directory, and a late replica applies it.
func TestEmbeddedStorageSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := core.NewStage("keep", core.Config{})
	t.Cleanup(s.Destroy)
	pub, err := Publish(s, PublishOptions{StorageDir: dir})
	require.NoError(t, err)
	q := queryOf(t, s, []string{"/A", "/B"})
	vals := []float32{1, 2}
	op, err := s.WriteAttribute(core.WriteRequest{Query: q, AttrName: "x", Ordinal: 1,
		Tensors: hostF32(vals)})
	must(t, s, op, err)
	op, err = s.AdvanceWriteFloor(1, core.ScopeAll, nil)
	must(t, s, op, err)
	waitFor(t, "the advance to be published", func() bool { return pub.Status().Advances == 1 })
	pub.Close()

	emb, err := StartEmbedded(dir)
	require.NoError(t, err)
	defer emb.Shutdown()
	seen, rep := mirrorOf(t, emb.URL(), "keep")
	waitFor(t, "the late replica", func() bool { return rep.Status().Ordinal == 1 })
	got, _ := seen(1)
	require.Equal(t, visible{"x": {"/A": string(bytesOf(vals[:1])), "/B": string(bytesOf(vals[1:]))}}, got)
}

// TestPrimaryKeepsWorkingWhenTheServerGoes: with the server gone, advances still complete at
// once, the publisher reports the outage and the drops, and Close returns within its bound.
func TestPrimaryKeepsWorkingWhenTheServerGoes(t *testing.T) {
	emb, err := StartEmbedded("")
	require.NoError(t, err)
	s := core.NewStage("gone", core.Config{})
	t.Cleanup(s.Destroy)
	pub, err := Publish(s, PublishOptions{URL: emb.URL(), Queue: 2})
	require.NoError(t, err)
	pub.flush = 300 * time.Millisecond
	q := queryOf(t, s, []string{"/A"})
	step := func(o uint64) { writeAndSeal(t, s, q, o, 1) }
	step(1)
	waitFor(t, "the first advance", func() bool { return pub.Status().Advances == 1 })
	emb.Shutdown()
	start := time.Now()
	for o := uint64(2); o <= 10; o++ {
		step(o)
	}
	require.Less(t, time.Since(start), 5*time.Second)
	waitFor(t, "the outage to be reported", func() bool { st := pub.Status(); return st.LastError != "" && st.Dropped > 0 })
	st := pub.Status()
	require.False(t, st.Connected)
	require.Equal(t, uint64(1), st.Ordinal)
	require.Equal(t, uint64(10), st.SealedOrdinal)
	start = time.Now()
	pub.Close()
	require.Less(t, time.Since(start), 3*time.Second)
}

// TestPerAttributeAdvancesReplicate: an INCLUDE advance seals only its attributes on the
// replica too; the later global advance seals the rest.
func TestPerAttributeAdvancesReplicate(t *testing.T) {
	s := core.NewStage("scoped", core.Config{})
	t.Cleanup(s.Destroy)
	pub, err := Publish(s, PublishOptions{})
	require.NoError(t, err)
	t.Cleanup(pub.Close)
	seen, rep := mirrorOf(t, pub.URL(), "scoped")
	q := queryOf(t, s, []string{"/A"})
	a, b := []float32{1}, []float32{2}
	op, err := s.WriteAttribute(core.WriteRequest{Query: q, AttrName: "a", Ordinal: 1, Tensors: hostF32(a)})
	must(t, s, op, err)
	op, err = s.WriteAttribute(core.WriteRequest{Query: q, AttrName: "b", Ordinal: 1, Tensors: hostF32(b)})
	must(t, s, op, err)
	tokA, err := s.Dictionary().InternToken("a")
	require.NoError(t, err)
	op, err = s.AdvanceWriteFloor(1, core.ScopeInclude, []uint64{tokA})
	must(t, s, op, err)
	op, err = s.AdvanceWriteFloor(2, core.ScopeAll, nil)
	must(t, s, op, err)
	waitFor(t, "both advances", func() bool { return rep.Status().Advances == 2 })
	first, _ := seen(1)
	require.Equal(t, visible{"a": {"/A": string(bytesOf(a))}}, first)
	second, _ := seen(2)
	require.Equal(t, visible{"a": {"/A": string(bytesOf(a))}, "b": {"/A": string(bytesOf(b))}}, second)
}
