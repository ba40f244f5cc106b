package core

import (
	"github.com/ovstage-go/ovstage/core/logbus"
	"github.com/ovstage-go/ovstage/core/status"
)

// LiveStages counts the stages that exist (logging needs at least one).
func LiveStages() int {
	stagesMu.RLock()
	defer stagesMu.RUnlock()
	return len(stages)
}

// onCreated runs in NewStage before the stage is registered: it routes op failures to the
// log and logs the creation.
func (s *Stage) onCreated() {
	s.pool.OnFailure = s.logOpFailure
	logbus.Logf(logbus.Info, logbus.ChannelStage, "stage %d %q created", s.ID, s.Name)
}

// onDestroyed runs once Destroy has drained the stage's ops.
func (s *Stage) onDestroyed() {
	dropHierarchies(s)
	logbus.Logf(logbus.Info, logbus.ChannelStage, "stage %d %q destroyed", s.ID, s.Name)
}

// logOpFailure logs an op that finished with an error (its own, or one of an input it needed).
func (s *Stage) logOpFailure(id uint64, err error) {
	logbus.Logf(logbus.Error, logbus.ChannelOps, "stage %d %q: op %d failed (%s): %s",
		s.ID, s.Name, id, status.CodeOf(err), status.MessageOf(err))
}
