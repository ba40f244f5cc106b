package core

import (
	"fmt"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
	"testing"
)

// cloneBenchStage is a stage holding others prims (/big/p<i>, one sealed float32 attribute)
// and the clone source /src with 10 float32 attributes.
func cloneBenchStage(b *testing.B, others int) *cstage {
	c := newCStage(b)
	if others > 0 {
		paths := make([]string, others)
		for i := range paths {
			paths[i] = fmt.Sprintf("/big/p%d", i)
		}
		vals := make([]float32, others)
		c.ok(c.s.WriteAttribute(WriteRequest{Query: c.query(paths...), AttrName: "mass", Ordinal: 1,
			Tensors: []tensor.Tensor{f32Tensor(vals)}}))
	}
	for a := range 10 {
		c.ok(c.write([]string{"/src"}, fmt.Sprintf("attr%d", a), 1, false, SemanticNone, fixedTensor(dtF32, f32s(float32(a)))))
	}
	c.seal(1)
	return c
}

// benchClone clones /src to targets fresh targets per iteration and waits for it.
func benchClone(b *testing.B, others, targets int) {
	c := cloneBenchStage(b, others)
	names := make([]string, targets)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for t := range names {
			names[t] = fmt.Sprintf("/dst%d_%d", i, t)
		}
		i++
		op, err := c.s.Clone("/src", names, uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		if res, err := c.s.WaitOp(op, TimeoutInfinite); err != nil || res.Status != status.OK {
			b.Fatal(res, err)
		}
		if err := c.s.ReleaseOp(op); err != nil {
			b.Fatal(err)
		}
		// Seal outside the timer: each clone sees a sealed stage, so the figure is the clone's
		// own cost (values still pending make every column lookup pay for them).
		b.StopTimer()
		c.seal(uint64(i + 1))
		b.StartTimer()
	}
}

// BenchmarkCloneOnePrimToOneTarget: the cost must not grow with the prims the stage holds
// besides the cloned subtree (fresh stage vs 200k others).
func BenchmarkCloneOnePrimToOneTarget(b *testing.B) {
	for _, others := range []int{0, 200_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) { benchClone(b, others, 1) })
	}
}

// BenchmarkCloneOnePrimTo16Targets is the multi-environment fan-out on a fresh stage.
func BenchmarkCloneOnePrimTo16Targets(b *testing.B) { benchClone(b, 0, 16) }
