package core

// Read-only views of engine state for the API boundaries: the C library reports an op's own
// failure code (fetch_clone_result) and the prim counts of a clone's report, which the engine
// keeps but no other call exposes.

// OpError is op id's own failure, with its status code; nil while the op is pending, when it
// succeeded, or when the id is unknown to the stage.
func (s *Stage) OpError(id uint64) error {
	s.mu.Lock()
	op, ok := s.ops[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return op.Err()
}

// SubtreePrimCount is the number of prims the stage holds at root or below it.
func (s *Stage) SubtreePrimCount(root uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p := range s.prims.all() {
		if s.isUnder(p, root) {
			n++
		}
	}
	return n
}
