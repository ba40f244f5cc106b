package core

import (
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// HandleKind names a kind of handle whose result is fetched: what AwaitHandle waits for.
type HandleKind string

// The handle kinds with a fetchable result.
const (
	HandleRead         HandleKind = "read"
	HandleMap          HandleKind = "map"
	HandleQuery        HandleKind = "query"
	HandleOrdinalQuery HandleKind = "ordinal_query"
	HandleHierarchy    HandleKind = "hierarchy"
)

// AwaitHandle waits up to timeoutNs (0 polls, TimeoutInfinite blocks) for the op that produces
// the result of handle h, and reports whether it finished, successfully or not. It hands out
// nothing: a caller that must stay interruptible waits in short slices here and then fetches
// with timeout 0, so an interrupt never falls between a fetch that handed out a group and its
// caller.
func (s *Stage) AwaitHandle(kind HandleKind, h, timeoutNs uint64) (bool, error) {
	s.mu.Lock()
	op, err := s.producerLocked(kind, h)
	s.mu.Unlock()
	if err != nil {
		return false, err
	}
	if op == nil { // resolved at creation (a path-list query)
		return true, nil
	}
	return op.Wait(waitDuration(timeoutNs)), nil
}

// producerLocked returns the op that produces handle h's result (nil: none to wait for).
func (s *Stage) producerLocked(kind HandleKind, h uint64) (*sched.Op, error) {
	switch kind {
	case HandleRead:
		r, err := s.readLocked(h)
		if err != nil {
			return nil, err
		}
		return r.Op, nil
	case HandleMap:
		m, err := s.mapLocked(h)
		if err != nil {
			return nil, err
		}
		return m.Op, nil
	case HandleQuery:
		q, err := s.queryLocked(h)
		if err != nil {
			return nil, err
		}
		return q.Producer, nil
	case HandleOrdinalQuery:
		oq, err := s.ordinalQueryLocked(h)
		if err != nil {
			return nil, err
		}
		return oq.Op, nil
	case HandleHierarchy:
		hh, err := s.hierarchyLocked(h)
		if err != nil {
			return nil, err
		}
		return hh.Op, nil
	}
	return nil, status.Errorf(status.InvalidArgument, "handle kind %q is not read, map, query, ordinal_query or hierarchy", kind)
}
