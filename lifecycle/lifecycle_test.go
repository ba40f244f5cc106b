package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ovstage-go/ovstage/core/status"
)

func policy(v uint64) Entry { return Entry{Type: KeyUint64, Key: KeyAdmissionPolicy, Uint: v} }
func model(v uint64) Entry  { return Entry{Type: KeyUint64, Key: KeyHierarchyModel, Uint: v} }

func requireCode(t *testing.T, err error, code status.Code, mentions string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, code, status.CodeOf(err), "%v", err)
	assert.Contains(t, status.MessageOf(err), mentions)
}

func TestReferencesBalance(t *testing.T) {
	var p Process
	requireCode(t, p.Shutdown(), status.InvalidArgument, "no ovstage_initialize reference")
	require.NoError(t, p.Initialize(nil))
	require.NoError(t, p.Initialize(nil))
	assert.True(t, p.Bootstrapped())
	require.NoError(t, p.Shutdown())
	require.NoError(t, p.Shutdown())
	assert.False(t, p.Bootstrapped())
	requireCode(t, p.Shutdown(), status.InvalidArgument, "balance")

	// An instance holds a reference of its own; shutdown only balances initialize.
	c := p.AcquireInstance()
	assert.True(t, p.Bootstrapped())
	assert.Empty(t, c.Entries)
	assert.Equal(t, Settings{HierarchyModel: ModelCPUIncremental, AdmissionPolicy: PolicyNondecreasing}, c.Settings,
		"a fresh lifetime: CPU_INCREMENTAL and NONDECREASING")
	requireCode(t, p.Shutdown(), status.InvalidArgument, "no ovstage_initialize reference")
	p.ReleaseInstance()
	assert.False(t, p.Bootstrapped())
}

func TestFirstReferenceConfiguresTheLifetime(t *testing.T) {
	var p Process
	root := Entry{Type: KeyString, Key: KeyBinaryPackageRootPath, String: "/opt"}
	require.NoError(t, p.Initialize([]Entry{model(ModelGPUGlobal), root}))
	c := p.AcquireInstance()
	assert.Equal(t, []Entry{model(ModelGPUGlobal), root}, c.Entries, "the entries as given, in order")
	assert.Equal(t, uint64(ModelGPUGlobal), c.Settings.HierarchyModel)

	// Later references: omitted or DEFAULT inherit; a different concrete value conflicts and
	// takes no reference.
	requireCode(t, p.Initialize([]Entry{model(ModelCPUIncremental)}), status.InvalidArgument, "conflicts with active process state")
	requireCode(t, p.Initialize([]Entry{policy(PolicyFloorOnly), model(ModelGPUIncremental)}), status.InvalidArgument, "conflicts")
	require.NoError(t, p.Initialize([]Entry{model(ModelRuntimeDefault), policy(PolicyDefault)}))
	require.NoError(t, p.Initialize([]Entry{model(ModelGPUGlobal), policy(PolicyNondecreasing)}))
	second := p.AcquireInstance()
	assert.Equal(t, c.Entries, second.Entries, "every instance of the lifetime reports its first entries")
	for range 3 {
		require.NoError(t, p.Shutdown())
	}
	requireCode(t, p.Shutdown(), status.InvalidArgument, "no ovstage_initialize") // the conflicts took none
	p.ReleaseInstance()
	p.ReleaseInstance()

	// A new lifetime starts from scratch.
	require.NoError(t, p.Initialize([]Entry{model(ModelCPUIncremental)}))
	assert.Equal(t, uint64(ModelCPUIncremental), p.AcquireInstance().Settings.HierarchyModel)
	p.ReleaseInstance()
	require.NoError(t, p.Shutdown())
}

// The admission policy is process-scoped: the first reference's concrete policy is the
// lifetime's (DEFAULT or none: NONDECREASING); later references inherit it with DEFAULT or no
// entry and conflict with another concrete one; a new lifetime may pick another.
func TestAdmissionPolicyIsProcessScoped(t *testing.T) {
	var p Process
	for _, pol := range []uint64{PolicyFloorOnly, PolicyNondecreasing, PolicyStrictlyIncreasing} {
		require.NoError(t, p.Initialize([]Entry{policy(pol)}))
		assert.Equal(t, pol, p.AcquireInstance().Settings.AdmissionPolicy)
		require.NoError(t, p.Initialize([]Entry{policy(PolicyDefault)}), "DEFAULT inherits")
		require.NoError(t, p.Initialize(nil), "no entry inherits")
		require.NoError(t, p.Initialize([]Entry{policy(pol)}), "the same concrete policy")
		other := PolicyFloorOnly + pol%3 // another concrete policy
		requireCode(t, p.Initialize([]Entry{policy(other)}), status.InvalidArgument,
			"runtime default ordinal admission policy")
		assert.Equal(t, pol, p.AcquireInstance().Settings.AdmissionPolicy, "the conflict changed nothing")
		for range 4 {
			require.NoError(t, p.Shutdown())
		}
		p.ReleaseInstance()
		p.ReleaseInstance()
		assert.False(t, p.Bootstrapped())
	}
	require.NoError(t, p.Initialize([]Entry{policy(PolicyDefault)}))
	assert.Equal(t, PolicyNondecreasing, p.AcquireInstance().Settings.AdmissionPolicy, "DEFAULT on a fresh lifetime")
	p.ReleaseInstance()
	require.NoError(t, p.Shutdown())
}

func TestEntriesAreCheckedAsAUnit(t *testing.T) {
	cases := []struct {
		name     string
		entries  []Entry
		code     status.Code
		mentions string
	}{
		{"key type out of range", []Entry{{Type: 9}}, status.InvalidArgument, "config->entries[0]: key_type 9"},
		{"negative key type", []Entry{{Type: -1}}, status.InvalidArgument, "key_type -1"},
		{"unknown uint64 key", []Entry{{Type: KeyUint64, Key: 4}}, status.InvalidArgument, "key 4 is not a UINT64 configuration key"},
		{"bool keys do not exist", []Entry{{Type: KeyBool}}, status.InvalidArgument, "is not a BOOL configuration key"},
		{"model INVALID", []Entry{model(0)}, status.InvalidArgument, "model 0 (INVALID)"},
		{"unknown model", []Entry{model(17)}, status.InvalidArgument, "model 17 is not a model"},
		{"unknown policy", []Entry{policy(8)}, status.InvalidArgument, "policy 8 is not a policy"},
		{"duplicate", []Entry{model(1), policy(1), model(1)}, status.InvalidArgument, "config->entries[2] repeats the UINT64 key 0 of config->entries[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Process
			requireCode(t, p.Initialize(c.entries), c.code, c.mentions)
			assert.False(t, p.Bootstrapped(), "a failed initialize takes no reference")
			requireCode(t, p.Initialize(append([]Entry{model(1)}, c.entries...)), c.code, "")
			assert.False(t, p.Bootstrapped())
		})
	}
}

// The history window is per instance: it never conflicts, and an instance takes the window of
// the latest initialize of its lifetime that named one (the engine's default before any).
func TestHistoryWindowIsTheLatestNamed(t *testing.T) {
	var p Process
	window := func(n uint64) Entry { return Entry{Type: KeyUint64, Key: KeyHistoryOrdinals, Uint: n} }
	budget := Entry{Type: KeyUint64, Key: KeyHistoryBytes, Uint: 1 << 20}
	require.NoError(t, p.Initialize(nil))
	assert.False(t, p.AcquireInstance().Settings.History.Set, "none named: the engine's default")
	require.NoError(t, p.Initialize([]Entry{window(0)}))
	assert.Equal(t, HistoryWindow{Set: true}, p.AcquireInstance().Settings.History)
	require.NoError(t, p.Initialize([]Entry{window(4), budget}), "a different window is no conflict")
	assert.Equal(t, HistoryWindow{Set: true, Ordinals: 4, Bytes: 1 << 20}, p.AcquireInstance().Settings.History)
	assert.Equal(t, HistoryWindow{Set: true, Ordinals: 4, Bytes: 1 << 20}, HistoryOf([]Entry{budget, window(4)}))
	assert.False(t, HistoryOf([]Entry{model(1)}).Set)
}
