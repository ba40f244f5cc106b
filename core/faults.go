package core

import "sync/atomic"

// faultSite names a critical section (one that holds the stage mutex) where a test may inject
// a panic, to check that a panicking op releases every lock, fails with INTERNAL and leaves
// the stage usable.
type faultSite uint8

const (
	faultWriteApply  faultSite = iota + 1 // applyWrite, resolving the column (writes, map commits)
	faultFloorApply                       // applyFloor, raising the floors
	faultDeleteApply                      // applyDelete, resolving the columns
	faultReadCollect                      // collectGroupsLocked (reads)
	faultCloneApply                       // applyClone, gathering the subtree
	faultMapPrepare                       // prepareMap, allocating the session's buffers
	faultQueryApply                       // a filter query's evaluation
)

// faultHook is nil in production; injectFault then costs one atomic load.
var faultHook atomic.Pointer[func(faultSite)]

// injectFault calls the test hook, if one is set, at site.
func injectFault(site faultSite) {
	if h := faultHook.Load(); h != nil {
		(*h)(site)
	}
}
