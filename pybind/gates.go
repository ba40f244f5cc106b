package pybind

import (
	"time"

	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
)

func gate(name string) (*core.Gate, error) {
	g := core.GateByName(name)
	if g == nil {
		return nil, status.Errorf(status.InvalidArgument, "test gate %q does not exist (use \"query\" or \"write\")", name)
	}
	return g, nil
}

// GateControl drives a process-wide test gate ("query" or "write"): action is one of
// "enable", "release", "reset", "fail_next". It returns true.
func GateControl(name, action string) (bool, error) {
	return call(func() (bool, error) {
		g, err := gate(name)
		if err != nil {
			return false, err
		}
		switch action {
		case "enable":
			g.Enable()
		case "release":
			g.Release()
		case "reset":
			g.Reset()
		case "fail_next":
			g.FailNext()
		default:
			return false, status.Errorf(status.InvalidArgument, "test gate action %q is not enable, release, reset or fail_next", action)
		}
		return true, nil
	})
}

// GateEnteredCount is the number of ops that reached the gate since its last reset.
func GateEnteredCount(name string) (int, error) {
	return call(func() (int, error) {
		g, err := gate(name)
		if err != nil {
			return 0, err
		}
		return g.EnteredCount(), nil
	})
}

// GateWaitUntilEntered waits up to timeoutNs (TimeoutInfinite: no limit) for at least n ops to
// have entered the gate; it reports whether they have.
func GateWaitUntilEntered(name string, n int, timeoutNs uint64) (bool, error) {
	return call(func() (bool, error) {
		g, err := gate(name)
		if err != nil {
			return false, err
		}
		d := time.Duration(-1)
		if timeoutNs != core.TimeoutInfinite {
			d = time.Duration(min(timeoutNs, uint64(1<<62)))
		}
		return g.WaitUntilEntered(n, d), nil
	})
}
