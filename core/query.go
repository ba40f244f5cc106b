package core

import (
	"github.com/ovstage-go/ovstage/core/column"
	"github.com/ovstage-go/ovstage/core/pathdict"
	"github.com/ovstage-go/ovstage/core/sched"
	"github.com/ovstage-go/ovstage/core/status"
)

// Query is a resolved (or, later, pending) ordered set of prims.
type Query struct {
	Handle uint64
	// Producer is the op that resolves the query (nil: resolved at creation).
	Producer *sched.Op
	// List is the query's own path list (one reference held by the query); read groups borrow it.
	List  pathdict.ListID
	Paths []uint64
	// users are unfinished ops that consume the query (its release waits for them).
	users     []*sched.Op
	releasing bool
	// selections caches each column's row mapping for this query (see column.Selection).
	selections map[*column.Column]*column.Selection
	// attributes discovered by a filter query (its result).
	attributes []uint64
}

func (q *Query) close(d *pathdict.Dictionary) {
	if q.List != 0 {
		_, _ = d.Release(q.List)
		q.List = 0
	}
}

// QueryFromPathList wraps a copy of the list's paths as a query, valid immediately. The query
// survives the caller releasing the list.
func (s *Stage) QueryFromPathList(list pathdict.ListID) (uint64, error) {
	paths, err := s.dict.ListPaths(list)
	if err != nil {
		return 0, status.Errorf(status.InvalidHandle, "path_list: %v", err)
	}
	own, err := s.dict.CreateList(paths)
	if err != nil {
		return 0, status.Errorf(status.InvalidHandle, "path_list: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLiveLocked(); err != nil {
		_, _ = s.dict.Release(own)
		return 0, err
	}
	q := &Query{Handle: newHandle(), List: own, Paths: append([]uint64(nil), paths...),
		selections: map[*column.Column]*column.Selection{}}
	s.queries[q.Handle] = q
	return q.Handle, nil
}

// queryLocked finds a usable query handle.
func (s *Stage) queryLocked(h uint64) (*Query, error) {
	if err := s.checkLiveLocked(); err != nil {
		return nil, err
	}
	if h == 0 {
		// The null handle is a bad argument (as the reference says), not a stale handle.
		return nil, status.Errorf(status.InvalidArgument, "query handle 0 is the null handle: pass a query from query or query_from_path_list")
	}
	q, ok := s.queries[h]
	if !ok || q.releasing {
		return nil, status.Errorf(status.InvalidHandle, "query handle %d is not valid on stage %d (released, from another stage, or never created)", h, s.ID)
	}
	return q, nil
}

// addUserLocked records op as a consumer of q, pruning finished ones.
func (q *Query) addUserLocked(op *sched.Op) {
	live := q.users[:0]
	for _, u := range q.users {
		if !u.Done() {
			live = append(live, u)
		}
	}
	q.users = append(live, op)
}

// ReleaseQuery releases the query after every in-flight op that uses it.
func (s *Stage) ReleaseQuery(h uint64) (uint64, error) {
	s.mu.Lock()
	defer s.unlockAndStart()
	q, err := s.queryLocked(h)
	if err != nil {
		return 0, err
	}
	q.releasing = true
	deps := append([]*sched.Op{q.Producer}, q.users...)
	op := s.enqueueLocked(opSpec{deps: deps, run: func(*sched.Op) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.queries != nil {
			delete(s.queries, h)
		}
		q.close(s.dict)
		return nil
	}})
	return op.ID, nil
}
