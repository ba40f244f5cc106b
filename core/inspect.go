package core

// Read-only views of engine state for the API boundaries: an op's own failure code, and the
// prims a stage holds below a path. (A clone's report comes from FetchCloneResult, recorded
// when the clone completes; the C library's first fetch_clone_result counted prims with
// SubtreePrimCount at its first fetch instead.)

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

// Destroyed reports whether Destroy has begun (every later call on the stage fails).
func (s *Stage) Destroyed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.destroyed
}
