package pybind

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
	"github.com/ovstage-go/ovstage/lifecycle"
)

func TestEncodeMarksMalformedRequests(t *testing.T) {
	assert.EqualError(t, encode(status.Malformedf("index_map and mask are mutually exclusive")),
		"[ovstage:-2] index_map and mask are mutually exclusive")
	assert.EqualError(t, encode(status.Errorf(status.InvalidArgument, "count 4 exceeds")), "[ovstage:1] count 4 exceeds")
	assert.NoError(t, encode(nil))
}

// A fetched query result is kept until it is released, exactly once.
func TestQueryResultsAreKeptUntilReleased(t *testing.T) {
	stage, err := CreateStage("results", 1, 0)
	require.NoError(t, err)
	defer func() { _, _ = DestroyStage(stage) }()
	answer, err := Query(stage, 0, 0, 0, false)
	require.NoError(t, err)
	h, err := strconv.ParseUint(strings.Fields(answer)[0], 10, 64)
	require.NoError(t, err)
	addr, err := FetchQueryResult(stage, h, ^uint64(0))
	require.NoError(t, err)
	require.NotZero(t, addr)
	id := abi.QueryResultID(cptr.At(addr))
	ok, err := ReleaseQueryResult(id)
	require.NoError(t, err)
	assert.True(t, ok)
	_, err = ReleaseQueryResult(id)
	assert.ErrorContains(t, err, "[ovstage:2]", "a second release is refused")
	_, err = ReleaseQueryResult(0)
	assert.ErrorContains(t, err, "[ovstage:2]")
}

// CreateStage refuses a config whose policy entry is not a policy (the Python package
// validates first; this is the last line), creating nothing and taking no process reference.
func TestCreateStageRefusesAnUnknownPolicy(t *testing.T) {
	for _, policy := range []uint64{4, 1 << 40} {
		cfg, err := abi.NewConfig([]lifecycle.Entry{
			{Type: lifecycle.KeyUint64, Key: lifecycle.KeyAdmissionPolicy, Uint: policy}})
		require.NoError(t, err)
		_, err = CreateStage("bad-policy", 1, uintptr(cfg.Ptr()))
		cfg.Free()
		require.Error(t, err, "policy %d", policy)
		assert.Contains(t, err.Error(), "ordinal admission policy", "policy %d", policy)
		assert.False(t, lifecycle.Global().Bootstrapped(), "policy %d left a process reference", policy)
	}
}

// A stage enforces the policy its process lifetime has, and StageConfig reports it.
func TestCreateStageCapturesTheLifetimesPolicy(t *testing.T) {
	cfg, err := abi.NewConfig([]lifecycle.Entry{
		{Type: lifecycle.KeyUint64, Key: lifecycle.KeyAdmissionPolicy, Uint: lifecycle.PolicyStrictlyIncreasing}})
	require.NoError(t, err)
	defer cfg.Free()
	stage, err := CreateStage("strict", 1, uintptr(cfg.Ptr()))
	require.NoError(t, err)
	defer func() { _, _ = DestroyStage(stage) }()
	answer, err := StageConfig(stage)
	require.NoError(t, err)
	fields := strings.Fields(answer)
	require.Len(t, fields, 5)
	assert.Equal(t, strconv.FormatUint(lifecycle.PolicyStrictlyIncreasing, 10), fields[2])
	assert.Equal(t, []string{"16", "268435456"}, fields[3:], "no window named: the default")
	plain, err := CreateStage("plain", 1, 0)
	require.NoError(t, err)
	defer func() { _, _ = DestroyStage(plain) }()
	answer, err = StageConfig(plain)
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatUint(lifecycle.PolicyStrictlyIncreasing, 10), strings.Fields(answer)[2],
		"a stage created while the lifetime is active captures its policy")
}

// A Python stage's history window is its own config's, whatever other stages use.
func TestCreateStageTakesItsOwnHistoryWindow(t *testing.T) {
	cfg, err := abi.NewConfig([]lifecycle.Entry{{Type: lifecycle.KeyUint64, Key: lifecycle.KeyHistoryOrdinals, Uint: 0}})
	require.NoError(t, err)
	defer cfg.Free()
	parity, err := CreateStage("parity", 1, uintptr(cfg.Ptr()))
	require.NoError(t, err)
	defer func() { _, _ = DestroyStage(parity) }()
	plain, err := CreateStage("plain", 1, 0)
	require.NoError(t, err)
	defer func() { _, _ = DestroyStage(plain) }()
	answer, err := StageConfig(parity)
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "268435456"}, strings.Fields(answer)[3:])
	answer, err = StageConfig(plain)
	require.NoError(t, err)
	assert.Equal(t, []string{"16", "268435456"}, strings.Fields(answer)[3:])
}
