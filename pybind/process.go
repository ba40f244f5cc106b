package pybind

import (
	"fmt"
	"sync"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/internal/cptr"
	"github.com/ovstage-go/ovstage/lifecycle"
)

// processRef is what a Python stage holds of the process lifetime (lifecycle/, the rules the C
// library follows): the capture it took when created, whether it also holds an initialize
// reference (a Stage given a config), and get_config's view of the captured entries.
type processRef struct {
	capture     lifecycle.Capture
	initialized bool
	config      abi.Block
}

var processRefs = struct {
	sync.Mutex
	byStage map[uint64]*processRef
}{byStage: map[uint64]*processRef{}}

// CreateStage creates a stage; workers <= 0 uses one worker per CPU. config is the address of
// an ovstage_config_t for a Stage given a config, else 0: its entries start the process
// lifetime when none is active (as the C library's ovstage_initialize), and a conflicting
// entry fails the creation with nothing changed.
func CreateStage(name string, workers int, config uintptr) (uint64, error) {
	return call(func() (id uint64, err error) {
		proc := lifecycle.Global()
		ref := &processRef{}
		var history lifecycle.HistoryWindow // a Python stage's window is its own config's
		if config != 0 {
			entries, err := abi.Config(cptr.At(config))
			if err != nil {
				return 0, err
			}
			if err := proc.Initialize(entries); err != nil {
				return 0, err
			}
			ref.initialized = true
			history = lifecycle.HistoryOf(entries)
		}
		ref.capture = proc.AcquireInstance()
		defer func() {
			if err != nil {
				ref.release()
			}
		}()
		if ref.config, err = abi.NewConfig(ref.capture.Entries); err != nil {
			return 0, err
		}
		// The lifetime's settings are concrete and checked (lifecycle/), so NewStage cannot refuse
		// them; each stage enforces the admission policy it captured, as each C instance does.
		s := core.NewStage(name, core.Config{Workers: workers,
			Admission:      core.AdmissionPolicy(ref.capture.Settings.AdmissionPolicy),
			HierarchyModel: int32(ref.capture.Settings.HierarchyModel),
			History:        abi.History(history)})
		processRefs.Lock()
		processRefs.byStage[s.ID] = ref
		processRefs.Unlock()
		return s.ID, nil
	})
}

// release drops the references the stage took and frees its config view.
func (r *processRef) release() {
	r.config.Free()
	lifecycle.Global().ReleaseInstance()
	if r.initialized {
		_ = lifecycle.Global().Shutdown() // the stage's own reference: always held
	}
}

// DestroyStage waits for the stage's pending ops, releases everything it holds, then its
// process references.
func DestroyStage(stageID uint64) (bool, error) {
	return withStage(stageID, func(s *core.Stage) (bool, error) {
		s.Destroy()
		processRefs.Lock()
		ref := processRefs.byStage[stageID]
		delete(processRefs.byStage, stageID)
		processRefs.Unlock()
		if ref != nil {
			ref.release()
		}
		return true, nil
	})
}

// StageConfig returns "<config address> <hierarchy model> <admission policy> <history
// ordinals> <history bytes>": the address of an ovstage_config_t viewing the entries that
// started the process lifetime the stage was created in (owned by the stage, valid until it
// is destroyed), the hierarchy model RUNTIME_DEFAULT resolves to in it, the ordinal admission
// policy the stage enforces and the stage's history window.
func StageConfig(stageID uint64) (string, error) {
	return withStage(stageID, func(s *core.Stage) (string, error) {
		processRefs.Lock()
		ref := processRefs.byStage[stageID]
		processRefs.Unlock()
		if ref == nil {
			return "", status.Errorf(status.InvalidHandle, "stage %d is being destroyed", stageID)
		}
		w := s.HistoryWindow()
		return fmt.Sprintf("%d %d %d %d %d", uintptr(ref.config.Ptr()), ref.capture.Settings.HierarchyModel,
			ref.capture.Settings.AdmissionPolicy, w.Ordinals, w.Bytes), nil
	})
}
