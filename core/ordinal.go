package core

import (
	"time"

	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// OrdinalQuery is a handle whose op computes one ordinal (a floor or the retention frontier).
type OrdinalQuery struct {
	Handle    uint64
	Op        *sched.Op
	value     uint64
	releasing bool
}

// GetOldestPreservedOrdinal enqueues a query of the inclusive retention frontier: change
// membership is exact for every key at or above it and, with a history window, every
// snapshot read at or above it is served the state it asks for.
func (s *Stage) GetOldestPreservedOrdinal() (uint64, uint64, error) {
	return s.enqueueOrdinalQuery(func() uint64 {
		frontier := uint64(0)
		for _, cols := range s.columns {
			for _, c := range cols {
				frontier = max(frontier, c.Frontier())
				if s.historyWindow.Ordinals > 0 {
					frontier = max(frontier, c.VersionFrontier())
				}
			}
		}
		return frontier
	})
}

// HistoryWindow is the window of versions the stage keeps.
func (s *Stage) HistoryWindow() History { return s.historyWindow }

// GetAttributeWriteFloor enqueues a query of an attribute's effective floor; attr 0 asks for
// the reported global floor (the minimum over known attributes).
func (s *Stage) GetAttributeWriteFloor(attr uint64) (uint64, uint64, error) {
	attr = s.canonicalAttr(attr)
	return s.enqueueOrdinalQuery(func() uint64 {
		if attr == 0 {
			return s.globalFloorLocked()
		}
		return s.floors.effective(attr)
	})
}

// enqueueOrdinalQuery runs compute (under s.mu) after the floor advances enqueued before it.
func (s *Stage) enqueueOrdinalQuery(compute func() uint64) (uint64, uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	if err := s.checkLiveLocked(); err != nil {
		return 0, 0, err
	}
	oq := &OrdinalQuery{Handle: newHandle()}
	oq.Op = s.enqueueLocked(opSpec{deps: s.pendingAdvancesLocked(), run: func(*sched.Op) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.checkLiveLocked(); err != nil {
			return err
		}
		oq.value = compute()
		return nil
	}})
	s.ordinalQueries[oq.Handle] = oq
	return oq.Handle, oq.Op.ID, nil
}

func (s *Stage) ordinalQueryLocked(h uint64) (*OrdinalQuery, error) {
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	oq, ok := s.ordinalQueries[h]
	if !ok || oq.releasing {
		return nil, status.Errorf(status.InvalidHandle, "ordinal query handle %d is not valid on stage %d (released, from another stage, or never created)", h, s.ID)
	}
	return oq, nil
}

// FetchOrdinal waits up to timeoutNs for an ordinal query and returns its value.
func (s *Stage) FetchOrdinal(h, timeoutNs uint64) (uint64, error) {
	oq, err := locked(s, func() (*OrdinalQuery, error) { return s.ordinalQueryLocked(h) })
	if err != nil {
		return 0, err
	}
	if err := awaitResult(oq.Op, timeoutNs, "ordinal query", h); err != nil {
		return 0, err
	}
	return oq.value, nil
}

// ReleaseOrdinalQuery releases an ordinal query handle after its op.
func (s *Stage) ReleaseOrdinalQuery(h uint64) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	oq, err := s.ordinalQueryLocked(h)
	if err != nil {
		return 0, err
	}
	oq.releasing = true
	op := s.enqueueLocked(opSpec{deps: []*sched.Op{oq.Op}, run: func(*sched.Op) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ordinalQueries != nil {
			delete(s.ordinalQueries, h)
		}
		return nil
	}})
	return op.ID, nil
}

// waitDuration converts a wait timeout in ns (TimeoutInfinite blocks) to a Duration (-1 blocks).
func waitDuration(timeoutNs uint64) time.Duration {
	if timeoutNs == TimeoutInfinite {
		return -1
	}
	return time.Duration(min(timeoutNs, uint64(1<<62)))
}
