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
