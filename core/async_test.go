package core

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/buffer"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func primPaths(prefix string, n int) []string {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/%s/p%d", prefix, i)
	}
	return paths
}

func TestSmallWriteCopiesAtEnqueue(t *testing.T) {
	f := newFixture(t)
	g := scopedGate(t, WriteGate)
	vals := []float32{1, 2, 3}
	op, err := f.write(1, vals)
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	vals[0] = 99 // the caller reuses its buffer while the op is still pending
	g.Release()
	f.wait(op)
	f.seal(1)
	got, err := f.readAll()
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 2, 3}}, got)
}

// wideLanes makes big payloads out of few prims (rows of 128 float32).
const wideLanes = 128

// newWideFixture is a fixture over enough prims for a payload of bytes (rows of wideLanes).
func newWideFixture(t *testing.T, cfg Config, bytes int) (*fixture, []float32) {
	rows := bytes / (4 * wideLanes)
	s := NewStage("wide", cfg)
	t.Cleanup(s.Destroy)
	list, err := s.Dictionary().CreateListFromStrings(primPaths("wide", rows))
	require.NoError(t, err)
	q, err := s.QueryFromPathList(list)
	require.NoError(t, err)
	_, _ = s.Dictionary().Release(list)
	attr, err := s.Dictionary().InternToken("wide")
	require.NoError(t, err)
	return &fixture{t: t, s: s, query: q, attr: attr}, make([]float32, rows*wideLanes)
}

func (f *fixture) writeWide(ordinal uint64, vals []float32) (uint64, error) {
	return f.write(ordinal, vals, int64(len(vals)/wideLanes), wideLanes)
}

// readWide returns the sealed values of a wide column in prim order.
func (f *fixture) readWide() []float32 {
	f.t.Helper()
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: ^uint64(0) - 1})
	require.NoError(f.t, err)
	f.wait(op)
	g, err := f.s.FetchReadNext(h, TimeoutInfinite)
	require.NoError(f.t, err)
	require.Nil(f.t, g.DataIndexMap)
	tv := g.Tensors[0]
	out := append([]float32(nil), unsafe.Slice((*float32)(unsafe.Add(tv.Buffer.Data(), tv.ByteOffset)), int(tv.Rows)*wideLanes)...)
	require.NoError(f.t, f.s.ReleaseGroup(g.ID))
	_, err = f.s.ReleaseRead(h)
	require.NoError(f.t, err)
	return out
}

func TestLargeWriteCopiesWhenItRuns(t *testing.T) {
	f, vals := newWideFixture(t, Config{}, DeferCopyBytes)
	g := scopedGate(t, WriteGate)
	op, err := f.writeWide(1, vals)
	require.NoError(t, err)
	require.True(t, g.WaitUntilEntered(1, 5*time.Second))
	vals[7] = 42 // deferred copy: the op reads the source when it runs
	g.Release()
	f.wait(op)
	f.seal(1)
	assert.Equal(t, float32(42), f.readWide()[7])
}

func TestParallelCopyOfAHugeWrite(t *testing.T) {
	saved := parallelCopyMin
	parallelCopyMin = 512 << 10
	t.Cleanup(func() { parallelCopyMin = saved })
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			f, vals := newWideFixture(t, Config{Workers: workers}, 2*DeferCopyBytes+3*4*wideLanes)
			for i := range vals {
				vals[i] = float32(i)
			}
			op, err := f.writeWide(1, vals)
			require.NoError(t, err)
			f.wait(op)
			f.seal(1)
			got := f.readWide()
			require.Len(t, got, len(vals))
			for i := range vals {
				if got[i] != vals[i] {
					require.Failf(t, "wrong value", "element %d: got %v, want %v", i, got[i], vals[i])
				}
			}
		})
	}
}

func TestUnstagedPayloadsAreReleased(t *testing.T) {
	f := newFixture(t)
	before := buffer.LiveCount()
	WriteGate.Reset()
	t.Cleanup(WriteGate.Reset)
	WriteGate.FailNext()
	op, err := f.write(1, []float32{1, 2, 3})
	require.NoError(t, err)
	assert.NotEmpty(t, f.wait(op).ErrorOpIDs)
	assert.Equal(t, before, buffer.LiveCount(), "a write failed by the gate frees its payload")

	// Rejected at enqueue: nothing is held either.
	_, err = f.write(1, []float32{1, 2})
	assert.Equal(t, status.InvalidArgument, status.CodeOf(err))
	assert.Equal(t, before, buffer.LiveCount())
}

// TestShuffledOrdinalsFromManyGoroutines submits writes of many ordinals in random order from
// several goroutines; after sealing, every key holds the value of its highest ordinal, with
// equal ordinals in submission order (each goroutine owns its ordinals, so its own submission
// order decides ties).
func TestShuffledOrdinalsFromManyGoroutines(t *testing.T) {
	for _, workers := range []int{1, 0} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			const prims, ordinals, writers = 16, 64, 4
			s := NewStage("shuffle", Config{Workers: workers})
			t.Cleanup(s.Destroy)
			list, err := s.Dictionary().CreateListFromStrings(primPaths("shuffle", prims))
			require.NoError(t, err)
			q, err := s.QueryFromPathList(list)
			require.NoError(t, err)
			_, _ = s.Dictionary().Release(list)
			attr, err := s.Dictionary().InternToken("v")
			require.NoError(t, err)

			type job struct {
				ordinal uint64
				seq     int // order among a goroutine's writes at this ordinal
				vals    []float32
				mask    []uint64 // which prims it writes
			}
			// Goroutine w owns ordinals o with o % writers == w; for each it submits two writes
			// (in order), the second masked to the even prims.
			perWriter := make([][]job, writers)
			for o := 1; o <= ordinals; o++ {
				w := o % writers
				for seq := 0; seq < 2; seq++ {
					vals := make([]float32, prims)
					for p := range vals {
						vals[p] = float32(o*100 + seq*10 + p%10)
					}
					mask := []uint64{1<<prims - 1}
					if seq == 1 {
						mask = []uint64{0x5555 & (1<<prims - 1)}
					}
					perWriter[w] = append(perWriter[w], job{uint64(o), seq, vals, mask})
				}
			}
			rng := rand.New(rand.NewSource(1))
			for w := range perWriter {
				jobs := perWriter[w]
				// Shuffle ordinals but keep each ordinal's two writes in order.
				pairs := make([][2]job, len(jobs)/2)
				for i := range pairs {
					pairs[i] = [2]job{jobs[2*i], jobs[2*i+1]}
				}
				rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
				perWriter[w] = perWriter[w][:0]
				for _, p := range pairs {
					perWriter[w] = append(perWriter[w], p[0], p[1])
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, writers*ordinals*2)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(jobs []job) {
					defer wg.Done()
					for _, j := range jobs {
						_, err := s.WriteAttribute(WriteRequest{Query: q, AttrToken: attr, Ordinal: j.ordinal,
							Tensors: []tensor.Tensor{f32Tensor(j.vals)}, Count: prims, Mask: j.mask, HasMask: true})
						if err != nil {
							errs <- err
						}
					}
				}(perWriter[w])
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			adv, err := s.AdvanceWriteFloor(ordinals, ScopeAll, nil)
			require.NoError(t, err)
			res, err := s.WaitOp(adv, TimeoutInfinite)
			require.NoError(t, err)
			require.Equal(t, status.OK, res.Status)

			f := &fixture{t: t, s: s, query: q, attr: attr}
			got, err := f.readAll()
			require.NoError(t, err)
			want := make([]float32, prims)
			for p := range want {
				// Highest ordinal wins; at that ordinal the masked second write wins on even prims.
				want[p] = float32(ordinals*100 + p%10)
				if p%2 == 0 {
					want[p] += 10
				}
			}
			assert.Equal(t, [][]float32{want}, got)
		})
	}
}
