package core

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/core/tensor"
)

// stuckAfter bounds every stage call in these tests: a stage wedged by a panic that kept its
// mutex fails the test instead of hanging the suite.
const stuckAfter = 5 * time.Second

// within runs fn on its own goroutine and fails the test if it has not returned in time (the
// goroutine is then left blocked: the stage it waits on is wedged). fn reports through its
// error; it must not call t.Fatal itself.
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panicked: %v", r)
			}
		}()
		done <- fn()
	}()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(stuckAfter):
		t.Fatalf("%s did not return within %v: the stage is wedged", what, stuckAfter)
	}
}

// waitOK waits for op and checks it succeeded (an error otherwise, for within).
func waitOK(s *Stage, op uint64) error {
	res, err := s.WaitOp(op, uint64(stuckAfter))
	switch {
	case err != nil:
		return err
	case res.Status != status.OK:
		return fmt.Errorf("op %d still pending", op)
	case len(res.ErrorOpIDs) > 0:
		return fmt.Errorf("op %d failed: %s", op, s.LastOpError(op))
	}
	return nil
}

// armFault makes the next critical section at site panic once (the hook is cleared when the
// test ends) and returns whether it fired.
func armFault(t *testing.T, site faultSite) *atomic.Bool {
	fired := &atomic.Bool{}
	hook := func(at faultSite) {
		if at == site && fired.CompareAndSwap(false, true) {
			panic(fmt.Sprintf("injected fault at site %d", at))
		}
	}
	faultHook.Store(&hook)
	t.Cleanup(func() { faultHook.Store(nil) })
	return fired
}

// newPanicFixture is a fixture holding "temperature" = {1,2,3} sealed at 1, whose cleanup
// destroys the stage only if that finishes in time (Destroy of a wedged stage never returns).
func newPanicFixture(t *testing.T) *fixture {
	t.Helper()
	s := NewStage("panic", Config{Workers: 2})
	f := &fixture{t: t, s: s}
	t.Cleanup(func() { within(t, "Destroy", func() error { s.Destroy(); return nil }) })
	list, err := s.Dictionary().CreateListFromStrings([]string{"/Panic/A", "/Panic/B", "/Panic/C"})
	require.NoError(t, err)
	f.query, err = s.QueryFromPathList(list)
	require.NoError(t, err)
	_, err = s.Dictionary().Release(list)
	require.NoError(t, err)
	f.attr = f.token("temperature")
	within(t, "setup", func() error { return f.writeAndSeal(1, []float32{1, 2, 3}) })
	return f
}

// writeAndSeal writes vals at ordinal, seals it and reads it back.
func (f *fixture) writeAndSeal(ordinal uint64, vals []float32) error {
	op, err := f.write(ordinal, vals)
	if err == nil {
		err = waitOK(f.s, op)
	}
	if err == nil {
		op, err = f.s.AdvanceWriteFloor(ordinal, ScopeAll, nil)
	}
	if err == nil {
		err = waitOK(f.s, op)
	}
	if err != nil {
		return err
	}
	return f.expectLatest(vals)
}

// expectLatest reads the latest sealed "temperature" and compares it with want.
func (f *fixture) expectLatest(want []float32) error {
	h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 100})
	if err != nil {
		return err
	}
	if err := waitOK(f.s, op); err != nil {
		return err
	}
	defer func() { _, _ = f.s.ReleaseRead(h) }()
	g, err := f.s.FetchReadNext(h, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.s.ReleaseGroup(g.ID) }()
	if got := tensorF32(g.Tensors[0]); !slices.Equal(got, want) || g.DataIndexMap != nil {
		return fmt.Errorf("read %v (index map %v), want %v", got, g.DataIndexMap, want)
	}
	return nil
}

func TestPanicInsideAStageCriticalSectionFailsTheOpAndKeepsTheStage(t *testing.T) {
	cases := []struct {
		name string
		site faultSite
		// start enqueues the op that panics (arming the fault at the right moment) and
		// returns its id and the handle to release afterwards.
		start func(f *fixture, arm func()) (uint64, error)
	}{
		{"write apply", faultWriteApply, func(f *fixture, arm func()) (uint64, error) {
			arm()
			return f.write(5, []float32{4, 5, 6})
		}},
		{"floor advance", faultFloorApply, func(f *fixture, arm func()) (uint64, error) {
			arm()
			return f.s.AdvanceWriteFloor(3, ScopeAll, nil)
		}},
		{"delete", faultDeleteApply, func(f *fixture, arm func()) (uint64, error) {
			arm()
			return f.s.DeleteAttributes(DeleteRequest{Query: f.query, Tokens: []uint64{f.attr}, Ordinal: 5})
		}},
		{"read", faultReadCollect, func(f *fixture, arm func()) (uint64, error) {
			// With the query gate armed the read is an op (ready, it runs on the caller).
			QueryGate.Enable()
			defer QueryGate.Reset()
			arm()
			h, op, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 10})
			if err == nil {
				_, err = f.s.ReleaseRead(h)
			}
			return op, err
		}},
		{"clone", faultCloneApply, func(f *fixture, arm func()) (uint64, error) {
			arm()
			return f.s.Clone("/Panic/A", []string{"/PanicCopy/A"}, 5)
		}},
		{"map prepare", faultMapPrepare, func(f *fixture, arm func()) (uint64, error) {
			arm()
			h, op, err := f.s.MapAttribute(MapRequest{Query: f.query, AttrToken: f.attr, Ordinal: 5})
			if err == nil {
				_, err = f.s.UnmapAttribute(h)
			}
			return op, err
		}},
		{"map commit", faultWriteApply, func(f *fixture, arm func()) (uint64, error) {
			h, op, err := f.s.MapAttribute(MapRequest{Query: f.query, AttrToken: f.attr, Ordinal: 5})
			if err == nil {
				err = waitOK(f.s, op)
			}
			if err == nil {
				_, err = f.s.FetchMapNext(h, 0)
			}
			if err != nil {
				return 0, err
			}
			arm()
			return f.s.UnmapAttribute(h)
		}},
		{"filter query", faultQueryApply, func(f *fixture, arm func()) (uint64, error) {
			arm()
			h, op, err := f.s.Query([]Predicate{{Attr: f.attr, Op: OpHas}}, nil)
			if err == nil {
				_, err = f.s.ReleaseQuery(h)
			}
			return op, err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			f := newPanicFixture(t)
			var fired *atomic.Bool
			var op uint64
			within(t, "enqueue", func() (err error) {
				op, err = c.start(f, func() { fired = armFault(t, c.site) })
				return err
			})
			var res WaitResult
			within(t, "wait_op", func() (err error) {
				res, err = f.s.WaitOp(op, uint64(stuckAfter))
				return err
			})
			require.True(t, fired.Load(), "the fault was injected")
			require.Equal(t, status.OK, res.Status, "the op finished (its waiter was told)")
			assert.Contains(t, res.ErrorOpIDs, op, "the op failed")
			msg := f.s.LastOpError(op)
			assert.True(t, strings.HasPrefix(msg, "INTERNAL"), "status INTERNAL: %q", msg)
			assert.Contains(t, msg, "injected fault")

			faultHook.Store(nil)
			within(t, "later write, seal and read", func() error { return f.writeAndSeal(20, []float32{7, 8, 9}) })
			within(t, "Destroy", func() error { f.s.Destroy(); return nil })
			deadline := time.Now().Add(stuckAfter)
			for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			assert.LessOrEqual(t, runtime.NumGoroutine(), baseline, "no goroutine is left behind")
		})
	}
}

// A read that is ready runs on the caller's thread: a panic there propagates to the API
// boundary (pybind turns it into INTERNAL) but must not keep the stage mutex.
func TestPanicInAnInlineReadReleasesTheStage(t *testing.T) {
	f := newPanicFixture(t)
	fired := armFault(t, faultReadCollect)
	var recovered any
	within(t, "inline read", func() error {
		defer func() { recovered = recover() }()
		_, _, err := f.s.ReadAttributes(f.query, []uint64{f.attr}, OrdinalRange{End: 10})
		return err
	})
	require.True(t, fired.Load())
	assert.Contains(t, fmt.Sprint(recovered), "injected fault", "the panic reaches the caller")
	within(t, "later read", func() error { return f.expectLatest([]float32{1, 2, 3}) })
}

// A panic on a helper goroutine of a split copy fails the write instead of killing the process.
func TestPanicInACopyHelperFailsTheWrite(t *testing.T) {
	old := parallelCopyMin
	parallelCopyMin = 1 << 20
	t.Cleanup(func() { parallelCopyMin = old })
	f := newPanicFixture(t) // two workers: the write's copy finds one free slot to split onto
	var fired atomic.Bool
	hook := func(part int) {
		if part == 1 && fired.CompareAndSwap(false, true) {
			panic("injected fault in copy part 1")
		}
	}
	copyPartHook.Store(&hook)
	t.Cleanup(func() { copyPartHook.Store(nil) })
	vals := make([]float32, 3<<20) // packed rows of 4 MiB: a deferred copy, split in two
	var op uint64
	var res WaitResult
	within(t, "split copy", func() (err error) {
		op, err = f.s.WriteAttribute(WriteRequest{Query: f.query, AttrName: "wide", Ordinal: 5,
			IsArray: true, Tensors: []tensor.Tensor{f32Tensor(vals)}})
		if err == nil {
			res, err = f.s.WaitOp(op, uint64(stuckAfter))
		}
		return err
	})
	require.True(t, fired.Load(), "the copy was split and the helper panicked")
	require.Equal(t, status.OK, res.Status)
	assert.Contains(t, res.ErrorOpIDs, op, "the write failed")
	msg := f.s.LastOpError(op)
	assert.True(t, strings.HasPrefix(msg, "INTERNAL"), "status INTERNAL: %q", msg)
	assert.Contains(t, msg, "injected fault")
	within(t, "later write", func() error { return f.writeAndSeal(20, []float32{7, 8, 9}) })
}
