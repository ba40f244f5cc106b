package replication

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// Replication throughput (docs/replication.md; issue 18's measure): one primary publishing a
// float32x3 column of every prim at each ordinal through the embedded server, one replica in
// the same process, against the raw JetStream publish of the same bytes in messages of the
// same size. Metrics: sealed payload MB/s until the publisher has every advance stored and
// until the replica applied it, and each as a ratio of the raw publish rate measured in the
// same run. tests/bench/bench_replication.py runs these.

func BenchmarkReplication10k(b *testing.B) { benchReplication(b, 10_000, 50) }
func BenchmarkReplication1M(b *testing.B)  { benchReplication(b, 1_000_000, 5) }

func benchReplication(b *testing.B, prims, ordinals int) {
	for range b.N {
		pubRate, repRate, rawRate := measureReplication(b, prims, ordinals)
		b.ReportMetric(pubRate, "MB/s-published")
		b.ReportMetric(repRate, "MB/s-replicated")
		b.ReportMetric(rawRate, "MB/s-raw")
		b.ReportMetric(pubRate/rawRate, "published/raw")
		b.ReportMetric(repRate/rawRate, "replicated/raw")
	}
}

func measureReplication(b *testing.B, prims, ordinals int) (pubRate, repRate, rawRate float64) {
	name := fmt.Sprintf("bench%d", prims)
	paths := benchPaths(prims)
	primary, pub, rep, q := benchPrimaryAndReplica(b, name, PublishOptions{StorageDir: b.TempDir(), Queue: ordinals + 1}, paths)
	vals := make([]float32, 3*prims)
	dt := tensor.DType{Code: tensor.CodeFloat, Bits: 32, Lanes: 3}
	payload := float64(ordinals * prims * 12)

	start := time.Now()
	for o := 1; o <= ordinals; o++ {
		vals[0] = float32(o)
		op, err := primary.WriteAttribute(core.WriteRequest{Query: q, AttrName: "pos", Ordinal: uint64(o),
			Tensors: []tensor.Tensor{{Data: unsafe.Pointer(&vals[0]), DeviceType: tensor.DeviceCPU, DType: dt, Shape: []int64{int64(prims)}}}})
		if err == nil {
			_, err = primary.WaitOp(op, core.TimeoutInfinite)
		}
		if err == nil {
			op, err = primary.AdvanceWriteFloor(uint64(o), core.ScopeAll, nil)
		}
		if err == nil {
			_, err = primary.WaitOp(op, core.TimeoutInfinite)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(payload/1e6/time.Since(start).Seconds(), "MB/s-produced")
	benchWait(b, func() bool { return pub.Status().Advances == uint64(ordinals) }, pub.Status)
	pubRate = payload / 1e6 / time.Since(start).Seconds()
	benchWait(b, func() bool { return rep.Status().Ordinal == uint64(ordinals) }, rep.Status)
	repRate = payload / 1e6 / time.Since(start).Seconds()
	if st := pub.Status(); st.Bytes != uint64(payload) {
		b.Fatalf("published %d payload bytes, want %d", st.Bytes, int(payload))
	}

	// The same bytes, published raw: one message per data message the publisher made.
	c := core.ColumnChanges{Attribute: "pos", DType: dt, Exact: true, Paths: paths,
		Ordinals: make([]uint64, prims), Deleted: make([]bool, prims), Values: unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 12*prims)}
	parts, err := splitColumn("x", 1, &c, pub.limit, nil)
	if err != nil {
		b.Fatal(err)
	}
	chunk := 12 * prims / len(parts)
	ctx := context.Background()
	if _, err := pub.js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	raw := make([]byte, chunk)
	start = time.Now()
	for range ordinals {
		var fs []jetstream.PubAckFuture
		for range parts {
			f, err := pub.js.PublishAsync("raw", raw)
			if err != nil {
				b.Fatal(err)
			}
			fs = append(fs, f)
		}
		for _, f := range fs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
	}
	rawRate = float64(ordinals*len(parts)*chunk) / 1e6 / time.Since(start).Seconds()
	return pubRate, repRate, rawRate
}

func benchWait[T any](b *testing.B, cond func() bool, state func() T) {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out: %+v", state())
		}
		time.Sleep(time.Millisecond)
	}
}

// benchPrimaryAndReplica starts a primary stage of `name` published with opt, a replica of
// it in this process, and a query of paths on the primary; all end with the run.
func benchPrimaryAndReplica(b *testing.B, name string, opt PublishOptions, paths []string) (*core.Stage, *Publisher, *Replica, uint64) {
	b.Helper()
	primary := core.NewStage(name, core.Config{})
	b.Cleanup(primary.Destroy)
	pub, err := Publish(primary, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pub.Close)
	mirror := core.NewStage(name, core.Config{})
	b.Cleanup(mirror.Destroy)
	rep, err := StartReplica(mirror, pub.URL(), name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rep.Close)
	list, err := primary.Dictionary().CreateListFromStrings(paths)
	if err != nil {
		b.Fatal(err)
	}
	q, err := primary.QueryFromPathList(list)
	if err != nil {
		b.Fatal(err)
	}
	return primary, pub, rep, q
}

// benchPaths names `prims` prims, a thousand under each environment.
func benchPaths(prims int) []string {
	paths := make([]string, prims)
	for i := range paths {
		paths[i] = fmt.Sprintf("/World/env%d/p%d", i/1000, i)
	}
	return paths
}
