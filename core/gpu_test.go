//go:build gpu

package core

// Real-GPU engine tests, built with -tags gpu (make gpu-bundle): every forEachDriver test also
// runs as a "GPU" subtest against the machine's driver, plus the tests below. Without a usable
// GPU they skip with the reason.

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/cuda"
	"github.com/ovstage-go/ovstage/core/tensor"
)

func init() { realDriver = true }

// Several producers write device columns at different ordinals while floors advance and a
// consumer reads: every read sees a complete sealed version on the device.
func TestGPUConcurrentDeviceColumns(t *testing.T) {
	g := newGPUFixture(t, false)
	const rows, ordinals, columns = 4096, 20, 4
	attrs := make([]uint64, columns)
	for c := range attrs {
		tok, err := g.s.Dictionary().InternToken(fmt.Sprintf("gpu_col_%d", c))
		require.NoError(t, err)
		attrs[c] = tok
	}
	paths := make([]string, rows)
	for i := range paths {
		paths[i] = fmt.Sprintf("/P%d", i)
	}
	list, err := g.s.Dictionary().CreateListFromStrings(paths)
	require.NoError(t, err)
	q, err := g.s.QueryFromPathList(list)
	require.NoError(t, err)
	_, err = g.s.Dictionary().Release(list)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, columns*ordinals)
	for c := 0; c < columns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for o := 1; o <= ordinals; o++ {
				vals := make([]float32, rows)
				for i := range vals {
					vals[i] = float32(o*1000 + c)
				}
				src, tn := g.upload(0, vals)
				op, err := g.s.WriteAttribute(WriteRequest{Query: q, AttrToken: attrs[c], Ordinal: uint64(o),
					Tensors: []tensor.Tensor{tn}})
				src.Release()
				if err != nil {
					errs <- err
					return
				}
				if res, err := g.s.WaitOp(op, TimeoutInfinite); err != nil || len(res.ErrorOpIDs) > 0 {
					errs <- fmt.Errorf("write %d/%d failed: %v %s", c, o, err, g.s.LastOpError(op))
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for o := 1; o <= ordinals; o++ {
		g.seal(uint64(o))
		h, op, err := g.s.ReadAttributes(q, attrs, OrdinalRange{End: uint64(o)})
		require.NoError(t, err)
		g.wait(op)
		for c := 0; c < columns; c++ {
			grp, err := g.s.FetchReadNext(h, TimeoutInfinite)
			require.NoError(t, err)
			tv := grp.Tensors[0]
			assert.Equal(t, cuda.DeviceCUDA, tv.DeviceType)
			got := download(t, tv.Buffer, rows)
			col := -1
			for k, a := range attrs {
				if a == grp.Attribute {
					col = k
				}
			}
			assert.Equal(t, float32(o*1000+col), got[0], "the version sealed at o")
			assert.Equal(t, got[0], got[rows-1])
			require.NoError(t, g.s.ReleaseGroup(grp.ID))
		}
		_, err = g.s.ReleaseRead(h)
		require.NoError(t, err)
	}
}
