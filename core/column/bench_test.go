package column

import "testing"

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
