package core

import (
	"fmt"
	"testing"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// The producer of tests/bench/bench_history.py in Go: a 1M-row float32x3 column, then per
// step a write of a disjoint 1% slice and a floor advance. With the window on, each seal
// also saves the rows it replaces; the two benchmarks side by side show what that costs.

const historyBenchPrims, historyBenchSlices = 1_000_000, 20

// historyProducer is the bench's stage: step writes the next ordinal's slice and seals it.
type historyProducer struct {
	f       *fixture
	slices  []uint64
	ordinal uint64
	pos     uint64 // the attribute's token
}

func newHistoryProducer(b *testing.B, window uint64) *historyProducer {
	paths := make([]string, historyBenchPrims)
	for i := range paths {
		paths[i] = fmt.Sprintf("/h/p%d", i)
	}
	p := &historyProducer{f: newFixtureConfig(b, windowConfig(window), paths...), slices: make([]uint64, historyBenchSlices)}
	changed := historyBenchPrims / 100
	for k := range p.slices {
		part := make([]string, changed)
		for i := range part {
			part[i] = paths[(i*historyBenchSlices+k)%historyBenchPrims]
		}
		list, err := p.f.s.Dictionary().CreateListFromStrings(part)
		if err != nil {
			b.Fatal(err)
		}
		if p.slices[k], err = p.f.s.QueryFromPathList(list); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	if p.pos, err = p.f.s.Dictionary().InternToken("pos"); err != nil {
		b.Fatal(err)
	}
	p.write(b, p.f.query, historyBenchPrims)
	for range window + 2 { // fill the window before timing
		p.step(b)
	}
	return p
}

func (p *historyProducer) write(b *testing.B, query uint64, rows int) {
	p.ordinal++
	req := WriteRequest{Query: query, AttrToken: p.pos, Ordinal: p.ordinal,
		Tensors: []tensor.Tensor{f32Tensor(make([]float32, rows*3), int64(rows), 3)}}
	op, err := p.f.s.WriteAttribute(req)
	if err != nil {
		b.Fatal(err)
	}
	adv, _ := p.f.s.AdvanceWriteFloor(p.ordinal, ScopeAll, nil)
	for _, id := range []uint64{op, adv} {
		if res, err := p.f.s.WaitOp(id, TimeoutInfinite); err != nil || res.Status != 0 {
			b.Fatal(res, err)
		}
		_ = p.f.s.ReleaseOp(id)
	}
}

func (p *historyProducer) step(b *testing.B) {
	p.write(b, p.slices[p.ordinal%historyBenchSlices], historyBenchPrims/100)
}

// read reads every prim at latest(end) and releases the groups.
func (p *historyProducer) read(b *testing.B, end uint64) {
	h, op, err := p.f.s.ReadAttributes(p.f.query, []uint64{p.pos}, latestAt(end))
	if err != nil {
		b.Fatal(err)
	}
	if res, err := p.f.s.WaitOp(op, TimeoutInfinite); err != nil || res.Status != 0 {
		b.Fatal(res, err)
	}
	for {
		g, err := p.f.s.FetchReadNext(h, TimeoutInfinite)
		if status.CodeOf(err) == status.EndOfIteration {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := p.f.s.ReleaseGroup(g.ID); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := p.f.s.ReleaseRead(h); err != nil {
		b.Fatal(err)
	}
	_ = p.f.s.ReleaseOp(op)
}

func benchHistoryProducer(b *testing.B, window uint64) {
	p := newHistoryProducer(b, window)
	b.ResetTimer()
	for b.Loop() {
		p.step(b)
	}
}

// BenchmarkHistoryProducerWindow16 must cost about what BenchmarkHistoryProducerWindow0 does.
func BenchmarkHistoryProducerWindow16(b *testing.B) { benchHistoryProducer(b, 16) }

func BenchmarkHistoryProducerWindow0(b *testing.B) { benchHistoryProducer(b, 0) }

// benchHistoryRead reads every prim lag ordinals behind the floor after each step (every read
// at a new N); only the read is timed.
func benchHistoryRead(b *testing.B, lag uint64) {
	p := newHistoryProducer(b, 16)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		p.step(b)
		b.StartTimer()
		p.read(b, p.ordinal-lag)
	}
}

// BenchmarkHistoryRead8Behind must cost about what BenchmarkHistoryReadAtFloor does.
func BenchmarkHistoryRead8Behind(b *testing.B) { benchHistoryRead(b, 8) }

func BenchmarkHistoryReadAtFloor(b *testing.B) { benchHistoryRead(b, 0) }
