// Package lifecycle holds the process state every instance shares: the references taken by
// initialize and by live instances, and the configuration the first of them gave. A process
// lifetime starts with the first reference and ends when the last one is dropped; each
// instance captures the resolved settings (and the entries that started the lifetime) when it
// is created. See docs/c-api.md ("Process lifetime and configuration").
package lifecycle

import (
	"fmt"
	"sync"

	"github.com/ovstage-go/ovstage/core/status"
)

// KeyType selects the key enum and the value member of a configuration entry.
type KeyType int32

// Key types (ovstage_config_key_type_t).
const (
	KeyBool KeyType = iota
	KeyInt64
	KeyUint64
	KeyDouble
	KeyString
	KeyBlob
	keyTypeCount
)

var keyTypeNames = [...]string{"BOOL", "INT64", "UINT64", "DOUBLE", "STRING", "BLOB"}

func (t KeyType) String() string {
	if t >= 0 && t < keyTypeCount {
		return keyTypeNames[t]
	}
	return fmt.Sprintf("key type %d", int32(t))
}

// The defined keys: four of type UINT64 (the history window ones are ours), one of type
// STRING; the other types have none.
const (
	KeyHierarchyModel        int32 = 0 // UINT64: the runtime-default hierarchy computation model
	KeyAdmissionPolicy       int32 = 1 // UINT64: the ordinal admission policy
	KeyHistoryOrdinals       int32 = 2 // UINT64: ordinals behind the floor snapshots are served at (0: none)
	KeyHistoryBytes          int32 = 3 // UINT64: the memory budget of those versions (0: the default)
	KeyBinaryPackageRootPath int32 = 0 // STRING: read by the static loader only
)

// Hierarchy computation model ids.
const (
	ModelInvalid        uint64 = 0
	ModelCPUIncremental uint64 = 1
	ModelGPUIncremental uint64 = 2
	ModelGPUGlobal      uint64 = 3
	ModelRuntimeDefault uint64 = 4
)

// Ordinal admission policies.
const (
	PolicyDefault            uint64 = 0
	PolicyFloorOnly          uint64 = 1
	PolicyNondecreasing      uint64 = 2
	PolicyStrictlyIncreasing uint64 = 3
	policyNames                     = "DEFAULT=0, FLOOR_ONLY=1, NONDECREASING=2, STRICTLY_INCREASING=3"
	modelNames                      = "CPU_INCREMENTAL=1, GPU_INCREMENTAL=2, GPU_GLOBAL=3, RUNTIME_DEFAULT=4"
)

// Entry is one typed configuration setting; Type says which value field is meaningful.
type Entry struct {
	Type   KeyType
	Key    int32
	Bool   bool
	Int    int64
	Uint   uint64
	Double float64
	String string
	Blob   []byte
}

// Settings are the resolved process settings an instance captures at creation.
type Settings struct {
	HierarchyModel  uint64 // concrete: CPU_INCREMENTAL unless configured
	AdmissionPolicy uint64 // concrete: NONDECREASING unless configured
	History         HistoryWindow
}

// HistoryWindow is the history window a set of entries names (the engine's default when Set
// is false). Unlike the other settings it belongs to each instance: it never conflicts, and
// an instance takes the window of the latest initialize that named one in its lifetime.
type HistoryWindow struct {
	Set      bool
	Ordinals uint64 // 0: no versions, the reference's answers
	Bytes    uint64 // 0: the default budget
}

var defaults = Settings{HierarchyModel: ModelCPUIncremental, AdmissionPolicy: PolicyNondecreasing}

// Capture is what an instance keeps from the lifetime it was created in.
type Capture struct {
	Entries  []Entry // the entries that started the lifetime, in the order given
	Settings Settings
}

// Process is a set of process references and the configuration they share. The package's
// functions use one process-wide value; tests make their own.
type Process struct {
	mu        sync.Mutex
	initRefs  int
	instances int
	entries   []Entry
	settings  Settings
}

var global Process

// Global is the process-wide state.
func Global() *Process { return &global }

func (p *Process) activeLocked() bool { return p.initRefs+p.instances > 0 }

// overrides is what a set of entries asks for (0 = no override of that setting).
type overrides struct {
	model, policy uint64
	history       HistoryWindow
}

// HistoryOf is the history window entries name (Set false when they name none). The entries
// must have passed Initialize's checks (a Python stage's own config did).
func HistoryOf(entries []Entry) HistoryWindow {
	o, _ := check(entries)
	return o.history
}

func invalid(format string, args ...any) error {
	return status.Errorf(status.InvalidArgument, format, args...)
}

// check validates entries as a unit: types and keys, value ranges, duplicates.
func check(entries []Entry) (overrides, error) {
	var o overrides
	seen := map[[2]int32]int{}
	for i, e := range entries {
		if e.Type < 0 || e.Type >= keyTypeCount {
			return o, invalid("config->entries[%d]: key_type %d is not a configuration key type (BOOL=0 .. BLOB=5)", i, int32(e.Type))
		}
		k := [2]int32{int32(e.Type), e.Key}
		if j, dup := seen[k]; dup {
			return o, invalid("config->entries[%d] repeats the %s key %d of config->entries[%d]", i, e.Type, e.Key, j)
		}
		seen[k] = i
		switch {
		case e.Type == KeyUint64 && e.Key == KeyHierarchyModel:
			switch e.Uint {
			case ModelCPUIncremental, ModelGPUIncremental, ModelGPUGlobal:
				o.model = e.Uint
			case ModelRuntimeDefault: // no override
			case ModelInvalid:
				return o, invalid("config->entries[%d]: hierarchy computation model 0 (INVALID) is not a model (%s)", i, modelNames)
			default:
				return o, invalid("config->entries[%d]: hierarchy computation model %d is not a model (%s)", i, e.Uint, modelNames)
			}
		case e.Type == KeyUint64 && e.Key == KeyAdmissionPolicy:
			switch e.Uint {
			case PolicyFloorOnly, PolicyNondecreasing, PolicyStrictlyIncreasing:
				o.policy = e.Uint
			case PolicyDefault: // no override
			default:
				return o, invalid("config->entries[%d]: ordinal admission policy %d is not a policy (%s)", i, e.Uint, policyNames)
			}
		case e.Type == KeyUint64 && e.Key == KeyHistoryOrdinals:
			o.history.Set, o.history.Ordinals = true, e.Uint
		case e.Type == KeyUint64 && e.Key == KeyHistoryBytes:
			o.history.Set, o.history.Bytes = true, e.Uint
		case e.Type == KeyString && e.Key == KeyBinaryPackageRootPath:
			// Read by the static loader; a shared library ignores it.
		default:
			return o, invalid("config->entries[%d]: key %d is not a %s configuration key", i, e.Key, e.Type)
		}
	}
	return o, nil
}

// resolve applies overrides to settings s: at the start of a lifetime (fresh) they become the
// settings; later, a concrete value must equal the active one.
func resolve(s Settings, o overrides, fresh bool) (Settings, error) {
	if fresh {
		s = defaults
		if o.model != 0 {
			s.HierarchyModel = o.model
		}
		if o.policy != 0 {
			s.AdmissionPolicy = o.policy
		}
		if o.history.Set {
			s.History = o.history
		}
		return s, nil
	}
	if o.history.Set {
		s.History = o.history // per instance: the latest window named wins
	}
	if o.model != 0 && o.model != s.HierarchyModel {
		return s, invalid("runtime default hierarchy computation model %d conflicts with active process state (model %d)", o.model, s.HierarchyModel)
	}
	if o.policy != 0 && o.policy != s.AdmissionPolicy {
		return s, invalid("runtime default ordinal admission policy %d conflicts with active process state (policy %d)", o.policy, s.AdmissionPolicy)
	}
	return s, nil
}

// Initialize takes one process reference, applying entries when it starts the lifetime. A bad
// or conflicting entry fails the whole call: nothing changes and no reference is taken.
func (p *Process) Initialize(entries []Entry) error {
	o, err := check(entries)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fresh := !p.activeLocked()
	s, err := resolve(p.settings, o, fresh)
	if err != nil {
		return err
	}
	if fresh {
		p.entries = append([]Entry(nil), entries...)
	}
	p.settings = s // a later initialize changes only the history window
	p.initRefs++
	return nil
}

// Shutdown drops one Initialize reference; the last reference of any kind ends the lifetime.
func (p *Process) Shutdown() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.initRefs == 0 {
		return invalid("no ovstage_initialize reference is held (each shutdown must balance one successful initialize)")
	}
	p.initRefs--
	p.endIfUnusedLocked()
	return nil
}

// AcquireInstance takes the reference of a new instance (starting a lifetime with no entries
// when none is active) and returns what the instance captures.
func (p *Process) AcquireInstance() Capture {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.activeLocked() {
		p.entries, p.settings = nil, defaults
	}
	p.instances++
	return Capture{Entries: append([]Entry(nil), p.entries...), Settings: p.settings}
}

// ReleaseInstance drops an instance's reference.
func (p *Process) ReleaseInstance() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.instances > 0 {
		p.instances--
	}
	p.endIfUnusedLocked()
}

func (p *Process) endIfUnusedLocked() {
	if !p.activeLocked() {
		p.entries, p.settings = nil, Settings{}
	}
}

// Bootstrapped reports whether a lifetime is active (an Initialize reference or a live
// instance): process-wide logging needs one.
func (p *Process) Bootstrapped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.activeLocked()
}
