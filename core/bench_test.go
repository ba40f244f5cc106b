package core

import (
	"fmt"
	"testing"

	"github.com/ovstage-go/ovstage/dlpack"
)

func BenchmarkWriteWait1000Prims(b *testing.B) {
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/p%d", i)
	}
	f := newFixture(b, paths...)
	vals := make([]float32, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op, err := f.s.WriteAttribute(WriteRequest{Query: f.query, AttrToken: f.attr, Ordinal: uint64(i + 1),
			Tensors: []dlpack.Tensor{f32Tensor(vals)}})
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
