package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/logbus"
)

// drainLog takes every queued message of the global bus.
func drainLog() []logbus.Message {
	var out []logbus.Message
	ack := uint64(0)
	for {
		m, ok := logbus.Global().Next(ack, 0)
		if !ok {
			return out
		}
		out = append(out, m)
		ack = m.Seq
	}
}

func TestEngineLogsLifecycleAndOpFailures(t *testing.T) {
	bus := logbus.Global()
	_, err := bus.Configure(logbus.Warning, "ovstage.stage=info")
	require.NoError(t, err)
	defer bus.Disable()

	h := newHierStage(t)
	vals := make([]float32, 1)
	h.writeRows([]string{"/P"}, AttrWorldMatrix, 1, f32, unsafe.Pointer(&vals[0]), 1)
	h.seal(1)
	op, err := h.s.ComputeHierarchy(ModelCPUIncremental, 1, 2) // fails: wrong world-matrix schema
	require.NoError(t, err)
	require.Error(t, h.wait(op))
	h.s.Destroy()

	msgs := drainLog()
	require.Len(t, msgs, 3, "created, op failure, destroyed (hierarchy INFO is below the default WARNING)")
	assert.Equal(t, logbus.Info, msgs[0].Severity)
	assert.Equal(t, logbus.ChannelStage, msgs[0].Channel)
	assert.Contains(t, msgs[0].Text, `"hierarchy" created`)
	assert.Equal(t, logbus.Error, msgs[1].Severity)
	assert.Equal(t, logbus.ChannelOps, msgs[1].Channel)
	assert.Contains(t, msgs[1].Text, "failed (INVALID_ARGUMENT)")
	assert.Contains(t, msgs[1].Text, "writes float64x16 or float32x16")
	assert.Equal(t, logbus.ChannelStage, msgs[2].Channel)
	assert.Contains(t, msgs[2].Text, `"hierarchy" destroyed`)
	assert.True(t, bus.Flush(0, 0))
}

func TestLiveStages(t *testing.T) {
	before := LiveStages()
	s := NewStage("count", Config{})
	assert.Equal(t, before+1, LiveStages())
	s.Destroy()
	assert.Equal(t, before, LiveStages())
}
