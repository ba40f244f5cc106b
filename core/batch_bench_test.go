package core

import (
	"fmt"
	"testing"

	"github.com/ovstage-go/ovstage/core/tensor"
)

const batchBenchPrims, batchBenchAttrs = 10_000, 8

// batchBenchRequests are the writes of batchBenchAttrs float32 attributes over the fixture's
// prims, one request per attribute.
func batchBenchRequests(b *testing.B) (*fixture, []WriteRequest) {
	paths := make([]string, batchBenchPrims)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/p%d", i)
	}
	f := newFixture(b, paths...)
	reqs := make([]WriteRequest, batchBenchAttrs)
	for a := range reqs {
		reqs[a] = WriteRequest{Query: f.query, AttrName: fmt.Sprintf("attr%d", a),
			Tensors: []tensor.Tensor{f32Tensor(make([]float32, batchBenchPrims))}}
	}
	return f, reqs
}

// benchWrites times one step (all attributes at one ordinal, then a wait for each op) and
// seals every 32 steps outside the timer.
func benchWrites(b *testing.B, step func(f *fixture, reqs []WriteRequest, ordinal uint64) []uint64) {
	f, reqs := batchBenchRequests(b)
	b.ReportAllocs()
	ordinal := uint64(0)
	for b.Loop() {
		ordinal++
		for _, op := range step(f, reqs, ordinal) {
			if res, err := f.s.WaitOp(op, TimeoutInfinite); err != nil || res.Status != 0 {
				b.Fatal(res, err)
			}
			_ = f.s.ReleaseOp(op)
		}
		if ordinal%32 == 0 {
			b.StopTimer()
			adv, _ := f.s.AdvanceWriteFloor(ordinal, ScopeAll, nil)
			_, _ = f.s.WaitOp(adv, TimeoutInfinite)
			_ = f.s.ReleaseOp(adv)
			b.StartTimer()
		}
	}
}

// BenchmarkWriteAttributesBatch8x10k is one write_attributes of 8 attributes x 10k prims; it
// must cost less than BenchmarkWriteAttributeSeparate8x10k, the same writes one op each.
func BenchmarkWriteAttributesBatch8x10k(b *testing.B) {
	benchWrites(b, func(f *fixture, reqs []WriteRequest, ordinal uint64) []uint64 {
		op, err := f.s.WriteAttributes(f.query, ordinal, 0, reqs)
		if err != nil {
			b.Fatal(err)
		}
		return []uint64{op}
	})
}

func BenchmarkWriteAttributeSeparate8x10k(b *testing.B) {
	benchWrites(b, func(f *fixture, reqs []WriteRequest, ordinal uint64) []uint64 {
		ops := make([]uint64, len(reqs))
		for i, req := range reqs {
			req.Ordinal = ordinal
			op, err := f.s.WriteAttribute(req)
			if err != nil {
				b.Fatal(err)
			}
			ops[i] = op
		}
		return ops
	})
}
