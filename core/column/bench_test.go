package column

import (
	"testing"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// BenchmarkReadSnapshot1000Rows is one snapshot read of a sealed 1,000-row float32 column
// through a cached selection, with the producer's next change pending: admission, pinning
// and the group ordinal.
func BenchmarkReadSnapshot1000Rows(b *testing.B) {
	c, err := New(1, f32)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	prims := make([]uint64, 1000)
	for i := range prims {
		prims[i] = uint64(i + 1)
	}
	vals := make([]float32, len(prims))
	c.Stage(prims, &Delta{Ordinal: 1, Seq: 1, Payload: payload(&testing.T{}, vals...)})
	if err := c.Seal(1); err != nil {
		b.Fatal(err)
	}
	c.Stage(prims, &Delta{Ordinal: 2, Seq: 2, Payload: payload(&testing.T{}, vals...)})
	bounds := Bounds{End: 1}
	var sel *Selection
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var snap Snapshot
		sel, _, snap, err = c.ReadSnapshot(prims, sel, bounds, describe)
		if err != nil {
			b.Fatal(err)
		}
		snap.Release()
	}
}

// producer is the producer of tests/bench/bench_history.py at the column: a sealed 1M-row
// float32x3 column, then per ordinal a write of a disjoint 1% slice and its seal.
type producer struct {
	c       *Column
	all     []uint64
	part    [][]uint64
	ordinal uint64
}

func newProducer(b *testing.B, window uint64) *producer {
	const rows, slices = 1_000_000, 20
	c, err := New(1, Schema{DType: tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	c.SetVersionWindow(window)
	p := &producer{c: c, all: make([]uint64, rows), part: make([][]uint64, slices)}
	for i := range p.all {
		p.all[i] = uint64(i + 1)
	}
	for k := range p.part {
		for i := k; i < rows; i += slices * 5 { // 1% of the rows, spread out
			p.part[k] = append(p.part[k], p.all[i])
		}
	}
	p.write(b, p.all)
	for range window + 2 { // fill the window
		p.step(b)
	}
	return p
}

func (p *producer) write(b *testing.B, prims []uint64) {
	p.ordinal++
	buf, err := buffer.New(len(prims) * 12)
	if err != nil {
		b.Fatal(err)
	}
	p.c.Stage(prims, &Delta{Ordinal: p.ordinal, Seq: p.ordinal, Payload: buf})
	if err := p.c.Seal(p.ordinal); err != nil {
		b.Fatal(err)
	}
}

func (p *producer) step(b *testing.B) { p.write(b, p.part[int(p.ordinal)%len(p.part)]) }

func benchProducer(b *testing.B, window uint64) {
	p := newProducer(b, window)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.step(b)
	}
}

func BenchmarkProducerWindow16(b *testing.B) { benchProducer(b, 16) }

func BenchmarkProducerWindow0(b *testing.B) { benchProducer(b, 0) }
