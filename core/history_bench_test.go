package core

import (
	"fmt"
	"testing"

	"github.com/ovstage-go/ovstage/core/tensor"
)

// The producer of tests/bench/bench_history.py in Go: a 1M-row float32x3 column, then per
// step a write of a disjoint 1% slice and a floor advance. With the window on, each seal
// also saves the rows it replaces; the two benchmarks side by side show what that costs.

const historyBenchPrims, historyBenchSlices = 1_000_000, 20

func benchHistoryProducer(b *testing.B, window uint64) {
	paths := make([]string, historyBenchPrims)
	for i := range paths {
		paths[i] = fmt.Sprintf("/h/p%d", i)
	}
	f := newFixtureConfig(b, windowConfig(window), paths...)
	changed := historyBenchPrims / 100
	slices := make([]uint64, historyBenchSlices)
	for k := range slices {
		part := make([]string, changed)
		for i := range part {
			part[i] = paths[(i*historyBenchSlices+k)%historyBenchPrims]
		}
		list, err := f.s.Dictionary().CreateListFromStrings(part)
		if err != nil {
			b.Fatal(err)
		}
		if slices[k], err = f.s.QueryFromPathList(list); err != nil {
			b.Fatal(err)
		}
	}
	step := func(query, ordinal uint64, rows int) {
		req := WriteRequest{Query: query, AttrName: "pos", Ordinal: ordinal,
			Tensors: []tensor.Tensor{f32Tensor(make([]float32, rows*3), int64(rows), 3)}}
		op, err := f.s.WriteAttribute(req)
		if err != nil {
			b.Fatal(err)
		}
		adv, _ := f.s.AdvanceWriteFloor(ordinal, ScopeAll, nil)
		for _, id := range []uint64{op, adv} {
			if res, err := f.s.WaitOp(id, TimeoutInfinite); err != nil || res.Status != 0 {
				b.Fatal(res, err)
			}
			_ = f.s.ReleaseOp(id)
		}
	}
	step(f.query, 1, historyBenchPrims)
	ordinal := uint64(1)
	for range window + 2 { // fill the window before timing
		ordinal++
		step(slices[ordinal%historyBenchSlices], ordinal, changed)
	}
	b.ResetTimer()
	for b.Loop() {
		ordinal++
		step(slices[ordinal%historyBenchSlices], ordinal, changed)
	}
}

// BenchmarkHistoryProducerWindow16 must cost about what BenchmarkHistoryProducerWindow0 does.
func BenchmarkHistoryProducerWindow16(b *testing.B) { benchHistoryProducer(b, 16) }

func BenchmarkHistoryProducerWindow0(b *testing.B) { benchHistoryProducer(b, 0) }
