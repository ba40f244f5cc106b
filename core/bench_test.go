package core

import (
	"fmt"
	"testing"

	"github.com/ovstage-go/ovstage/core/tensor"
)

func benchFixture(b *testing.B) (*fixture, []float32) {
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/p%d", i)
	}
	return newFixture(b, paths...), make([]float32, 1000)
}

// BenchmarkWriteWait1000Prims is a write of 1,000 float32 prims and a wait for it.
func BenchmarkWriteWait1000Prims(b *testing.B) {
	f, vals := benchFixture(b)
	req := WriteRequest{Query: f.query, AttrToken: f.attr, Tensors: []tensor.Tensor{f32Tensor(vals)}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req.Ordinal = uint64(i + 1)
		op, err := f.s.WriteAttribute(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.s.WaitOp(op, TimeoutInfinite); err != nil {
			b.Fatal(err)
		}
		_ = f.s.ReleaseOp(op)
		if i%64 == 63 {
			adv, _ := f.s.AdvanceWriteFloor(uint64(i+1), ScopeAll, nil)
			_, _ = f.s.WaitOp(adv, TimeoutInfinite)
			_ = f.s.ReleaseOp(adv)
		}
	}
}

// BenchmarkWriteEnqueue1000Prims is the Go-level enqueue of a write of 1,000 float32 prims
// (validation, payload copy, op registration; the op runs inline since it is ready). The floor
// advance and op releases that keep memory bounded run outside the timer.
func BenchmarkWriteEnqueue1000Prims(b *testing.B) {
	f, vals := benchFixture(b)
	req := WriteRequest{Query: f.query, AttrToken: f.attr, Tensors: []tensor.Tensor{f32Tensor(vals)}}
	ops := make([]uint64, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req.Ordinal = uint64(i + 1)
		op, err := f.s.WriteAttribute(req)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, op)
		if len(ops) == cap(ops) {
			b.StopTimer()
			for _, op := range ops {
				_, _ = f.s.WaitOp(op, TimeoutInfinite)
				_ = f.s.ReleaseOp(op)
			}
			ops = ops[:0]
			adv, _ := f.s.AdvanceWriteFloor(uint64(i+1), ScopeAll, nil)
			_, _ = f.s.WaitOp(adv, TimeoutInfinite)
			_ = f.s.ReleaseOp(adv)
			b.StartTimer()
		}
	}
}

// benchLatestRead reads attr through query at latest(end) and releases everything, b.N times.
func benchLatestRead(b *testing.B, f *fixture, query, end uint64) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		readOnce(b, f, query, end)
	}
}

// readOnce reads attr through query at latest(end): every group fetched and released, the read
// released and its release waited for.
func readOnce(b *testing.B, f *fixture, query, end uint64) {
	h, op, err := f.s.ReadAttributes(query, []uint64{f.attr}, OrdinalRange{End: end})
	if err != nil {
		b.Fatal(err)
	}
	_ = f.s.ReleaseOp(op)
	for {
		g, err := f.s.FetchReadNext(h, TimeoutInfinite)
		if err != nil {
			break
		}
		_ = f.s.ReleaseGroup(g.ID)
	}
	rel, err := f.s.ReleaseRead(h)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = f.s.WaitOp(rel, TimeoutInfinite)
	_ = f.s.ReleaseOp(rel)
}

// benchWrite writes vals through f's query at ordinal and waits.
func benchWrite(b *testing.B, f *fixture, ordinal uint64, vals []float32) {
	b.Helper()
	op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: ordinal,
		Tensors: []tensor.Tensor{f32Tensor(vals)}})
	if err != nil {
		b.Fatal(err)
	}
	f.wait(op)
}

// BenchmarkLatestRead1000Prims is a snapshot read at the floor of a sealed 1,000-prim float32
// column through the query that wrote it (one dense group), fetched and released.
func BenchmarkLatestRead1000Prims(b *testing.B) {
	f, vals := benchFixture(b)
	benchWrite(b, f, 1, vals)
	f.seal(1)
	benchLatestRead(b, f, f.query, 1)
}

// BenchmarkLatestReadProducerAhead1000Prims is the same read while the producer has already
// written the next ordinal (not sealed yet).
func BenchmarkLatestReadProducerAhead1000Prims(b *testing.B) {
	f, vals := benchFixture(b)
	benchWrite(b, f, 1, vals)
	f.seal(1)
	benchWrite(b, f, 2, vals)
	benchLatestRead(b, f, f.query, 1)
}

// BenchmarkLatestReadSparse500Of1000Prims reads every other prim of the column (a sparse
// group with a data index map).
func BenchmarkLatestReadSparse500Of1000Prims(b *testing.B) {
	f, vals := benchFixture(b)
	benchWrite(b, f, 1, vals)
	f.seal(1)
	paths := make([]string, 0, 500)
	for i := 0; i < 1000; i += 2 {
		paths = append(paths, fmt.Sprintf("/bench/p%d", i))
	}
	list, err := f.s.Dictionary().CreateListFromStrings(paths)
	if err != nil {
		b.Fatal(err)
	}
	q, err := f.s.QueryFromPathList(list)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = f.s.Dictionary().Release(list)
	benchLatestRead(b, f, q, 1)
}

// BenchmarkStep1000Prims is a producer's step on a 1,000-prim float32 column: write, wait,
// seal the ordinal, and a latest read of it (fetched and released), as bench_step.py runs it.
func BenchmarkStep1000Prims(b *testing.B) {
	f, vals := benchFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ordinal := uint64(i + 1)
		benchWrite(b, f, ordinal, vals)
		f.seal(ordinal)
		readOnce(b, f, f.query, ordinal)
	}
}

// benchIsaacStep is bench_step.py's Isaac-style step in Go: a write of an (n, 4, 4) float32
// MATRIX column, wait, seal, and a latest read of it, on a stage with a history window of
// window ordinals (docs/architecture.md).
func benchIsaacStep(b *testing.B, n int, window uint64) {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/isaac/p%d", i)
	}
	f := newFixtureConfig(b, Config{History: &History{Ordinals: window}}, paths...)
	vals := make([]float32, n*16)
	b.ReportAllocs()
	b.SetBytes(int64(len(vals) * 4))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ordinal := uint64(i + 1)
		op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: ordinal,
			Tensors: []tensor.Tensor{f32Tensor(vals, int64(n), 4, 4)}, Semantic: SemanticMatrix})
		if err != nil {
			b.Fatal(err)
		}
		f.wait(op)
		f.seal(ordinal)
		readOnce(b, f, f.query, ordinal)
	}
}

// BenchmarkIsaacStep*: bench_step.py's Isaac step sizes, with the default window of 16
// ordinals and with none.
func BenchmarkIsaacStep4096(b *testing.B)         { benchIsaacStep(b, 4096, DefaultHistoryOrdinals) }
func BenchmarkIsaacStep65536(b *testing.B)        { benchIsaacStep(b, 65536, DefaultHistoryOrdinals) }
func BenchmarkIsaacStep4096Window0(b *testing.B)  { benchIsaacStep(b, 4096, 0) }
func BenchmarkIsaacStep65536Window0(b *testing.B) { benchIsaacStep(b, 65536, 0) }
