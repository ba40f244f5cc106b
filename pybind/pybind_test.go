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
