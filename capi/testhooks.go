package main

/*
#include "capi.h"
*/
import "C"

import (
	"time"

	"github.com/ovstage-go/ovstage/core"
)

// The ovstage.test.hooks extension (extensions.c) drives the engine's test gates, which hold
// queries/reads (gate 0) or mutations (gate 1) pending deterministically.

const gateWaitLimit = 10 * time.Second // wait_until_entered never blocks a test for longer

//export ovsgo_test_gate
func ovsgo_test_gate(gate, action C.int) (n C.uint32_t) {
	defer func() {
		if r := recover(); r != nil {
			_ = recovered("ovstage.test.hooks", r)
			n = 0
		}
	}()
	g := core.QueryGate
	if gate == 1 {
		g = core.WriteGate
	}
	switch action {
	case 0:
		g.Enable()
	case 1:
		g.WaitUntilEntered(1, gateWaitLimit)
	case 2:
		g.Release()
	case 3:
		g.Reset()
	case 4:
		return C.uint32_t(g.EnteredCount())
	case 5:
		g.FailNext()
	}
	return 0
}

//export ovsgo_panic_probe
func ovsgo_panic_probe() (code C.int) {
	const fn = "go_panic_probe"
	defer guard(fn, &code)
	var table map[string]int
	table["panic"] = 1 // assignment to a nil map: a runtime panic, recovered by guard
	return 0
}
