package replication

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Snapshot cost (docs/replication.md, "Snapshots"): a primary holding a float32x3 value of
// 100k prims, its stream limited to a few messages. Metrics: sealed payload MB/s of storing a
// snapshot (Publisher.Snapshot), of a late replica starting from it (StartReplica until it
// applied the snapshot), and of one ordinary advance of the same bytes replicated to a live
// replica, measured in the same run; snapshot/advance and start/advance are their ratios.

func BenchmarkSnapshot100k(b *testing.B) {
	for range b.N {
		measureSnapshot(b, 100_000)
	}
}

func measureSnapshot(b *testing.B, prims int) {
	name := fmt.Sprintf("snapbench%d", prims)
	primary, pub, rep, q := benchPrimaryAndReplica(b, name, PublishOptions{StorageDir: b.TempDir(), MaxMsgs: 2}, benchPaths(prims))
	vals := make([]float32, 3*prims)
	dt := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3}
	payload := float64(prims * 12)
	advance := func(o uint64) {
		op, err := primary.WriteAttribute(core.WriteRequest{Query: q, AttrName: "pos", Ordinal: o,
			Tensors: []tensor.Tensor{{Data: unsafe.Pointer(&vals[0]), DeviceType: tensor.DeviceCPU, DType: dt, Shape: []int64{int64(prims)}}}})
		if err == nil {
			_, err = primary.WaitOp(op, core.TimeoutInfinite)
		}
		if err == nil {
			op, err = primary.AdvanceWriteFloor(o, core.ScopeAll, nil)
		}
		if err == nil {
			_, err = primary.WaitOp(op, core.TimeoutInfinite)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	advance(1) // the paths are interned and cached on both sides from here on
	benchWait(b, func() bool { return rep.Status().Ordinal == 1 }, rep.Status)
	start := time.Now()
	advance(2)
	benchWait(b, func() bool { return rep.Status().Ordinal == 2 }, rep.Status)
	advRate := payload / 1e6 / time.Since(start).Seconds()

	start = time.Now()
	if err := pub.Snapshot(time.Minute); err != nil {
		b.Fatal(err)
	}
	snapRate := payload / 1e6 / time.Since(start).Seconds()

	late := core.NewStage(name, core.Config{})
	defer late.Destroy()
	start = time.Now()
	lrep, err := StartReplica(late, pub.URL(), name)
	if err != nil {
		b.Fatal(err)
	}
	defer lrep.Close()
	startRate := payload / 1e6 / time.Since(start).Seconds()
	if st := lrep.Status(); st.SnapshotOrdinal != 2 {
		b.Fatalf("late replica did not start from the snapshot: %+v", st)
	}
	b.ReportMetric(advRate, "MB/s-advance")
	b.ReportMetric(snapRate, "MB/s-snapshot")
	b.ReportMetric(startRate, "MB/s-start")
	b.ReportMetric(snapRate/advRate, "snapshot/advance")
	b.ReportMetric(startRate/advRate, "start/advance")
}
