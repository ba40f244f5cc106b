package main

/*
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ovstage-go/ovstage/abi"
	"github.com/ovstage-go/ovstage/core"
	"github.com/ovstage-go/ovstage/core/status"
	"github.com/ovstage-go/ovstage/lifecycle"
)

// instance is one ovstage instance: its engine stage, the C bundles the host holds, what it
// captured from the process lifetime, and the results and sessions it keeps for the host.
type instance struct {
	id      uint64 // the stage id; also the context value of both bundles
	stage   *core.Stage
	bundle  *C.ovstage_instance_t         // owned by the host until destroy
	dict    *C.path_dictionary_instance_t // owned by the instance
	capture lifecycle.Capture
	config  abi.Block // get_config's view of capture.Entries
	models  abi.Block // get_hierarchy_computation_models' array
	nModels int

	mu           sync.Mutex
	queryResults abi.Results
	hierResults  abi.Results
	mapGroups    map[uintptr]mapGroupRef
	// managed counts writes whose managed tensors are released once their op completes;
	// destroy waits for them, so every deleter has run when destroy returns.
	managed sync.WaitGroup
}

// The live instances, by context (stage id) and by bundle address. A bundle or context the
// library did not hand out, or one already destroyed, is never dereferenced: it is not found.
var registry = struct {
	sync.RWMutex
	byContext map[uint64]*instance
	byBundle  map[uintptr]*instance
}{byContext: map[uint64]*instance{}, byBundle: map[uintptr]*instance{}}

// byContext finds the instance of a vtable slot's context.
func byContext(ctx C.uintptr_t) (*instance, error) {
	if ctx == 0 {
		return nil, invalid("context is NULL")
	}
	registry.RLock()
	in := registry.byContext[uint64(ctx)]
	registry.RUnlock()
	if in == nil {
		return nil, status.Errorf(status.InvalidHandle, "context %#x is not the context of a live instance (destroyed, or not made by this library)", uintptr(ctx))
	}
	return in, nil
}

// byBundle finds the instance of a flat function's ovstage_instance_t*.
func byBundle(p C.uintptr_t) (*instance, error) {
	if p == 0 {
		return nil, invalid("instance is NULL")
	}
	registry.RLock()
	in := registry.byBundle[uintptr(p)]
	registry.RUnlock()
	if in == nil {
		return nil, status.Errorf(status.InvalidHandle, "instance %#x is not a live instance (destroyed, or not made by this library)", uintptr(p))
	}
	return in, nil
}

//export ovsgo_create_instance
func ovsgo_create_instance(desc unsafe.Pointer, out unsafe.Pointer) (code C.int) {
	const fn = "ovstage_create_instance"
	defer guard(fn, &code)
	if out == nil {
		return fail(fn, invalid("out_instance is NULL"))
	}
	*(**C.ovstage_instance_t)(out) = nil
	name := ""
	if desc != nil {
		if p := (*C.ovstage_instance_desc_t)(desc).name; p != nil {
			name = C.GoString(p)
		}
	}
	in, err := newInstance(name)
	if err != nil {
		return fail(fn, err)
	}
	*(**C.ovstage_instance_t)(out) = in.bundle
	return 0
}

func newInstance(name string) (in *instance, err error) {
	capture := lifecycle.Global().AcquireInstance()
	in = &instance{capture: capture, mapGroups: map[uintptr]mapGroupRef{}}
	defer func() {
		if err != nil {
			in.freeBlocks()
			lifecycle.Global().ReleaseInstance()
		}
	}()
	if in.config, err = abi.NewConfig(capture.Entries); err != nil {
		return nil, err
	}
	models := core.HierarchyModels()
	if in.models, err = abi.NewHierarchyModels(models); err != nil {
		return nil, err
	}
	in.nModels = len(models)
	// The instance enforces the admission policy of the lifetime it was created in, and the
	// engine resolves RUNTIME_DEFAULT (compute_hierarchy, floor advances) to the model the
	// instance captured.
	in.stage = core.NewStage(name, core.Config{
		Admission:      core.AdmissionPolicy(capture.Settings.AdmissionPolicy),
		HierarchyModel: int32(capture.Settings.HierarchyModel),
		History:        abi.History(capture.Settings.History),
	})
	in.id = in.stage.ID
	in.bundle = C.ovs_new_instance_bundle(C.uintptr_t(in.id))
	in.dict = C.ovs_new_dictionary_bundle(C.uintptr_t(in.id))
	if in.bundle == nil || in.dict == nil {
		in.stage.Destroy()
		return nil, status.Errorf(status.OutOfMemory, "cannot allocate the instance bundle")
	}
	registry.Lock()
	registry.byContext[in.id] = in
	registry.byBundle[uintptr(unsafe.Pointer(in.bundle))] = in
	registry.Unlock()
	return in, nil
}

// freeBlocks frees the C memory the instance owns (bundles, views, unreleased results).
func (in *instance) freeBlocks() {
	in.config.Free()
	in.models.Free()
	C.free(unsafe.Pointer(in.dict))
	C.free(unsafe.Pointer(in.bundle))
	in.queryResults.FreeAll()
	in.hierResults.FreeAll()
}

//export ovsgo_destroy_instance
func ovsgo_destroy_instance(p C.uintptr_t) (code C.int) {
	const fn = "ovstage_destroy_instance"
	defer guard(fn, &code)
	if p == 0 {
		return 0
	}
	in, err := byBundle(p)
	if err != nil {
		return fail(fn, err)
	}
	registry.Lock()
	if registry.byBundle[uintptr(p)] != in { // destroyed by another thread meanwhile
		registry.Unlock()
		return fail(fn, status.Errorf(status.InvalidHandle, "instance %#x is being destroyed by another call", uintptr(p)))
	}
	delete(registry.byBundle, uintptr(p))
	delete(registry.byContext, in.id)
	registry.Unlock()
	in.stage.Destroy() // drains pending ops; groups free their blocks
	in.managed.Wait()
	in.freeBlocks()
	lifecycle.Global().ReleaseInstance()
	return 0
}

//export ovsgo_get_config
func ovsgo_get_config(p C.uintptr_t, out unsafe.Pointer) (code C.int) {
	const fn = "ovstage_get_config"
	defer guard(fn, &code)
	if p == 0 || out == nil {
		return fail(fn, invalid("instance and out_config must not be NULL"))
	}
	in, err := byBundle(p)
	if err != nil {
		return fail(fn, err)
	}
	in.config.CopyTo(out)
	return 0
}

//export ovsgo_get_usd_stage_id
func ovsgo_get_usd_stage_id(p C.uintptr_t, out unsafe.Pointer) (code C.int) {
	const fn = "ovstage_get_usd_stage_id"
	defer guard(fn, &code)
	if p == 0 || out == nil {
		return fail(fn, invalid("instance and out_usd_stage_id must not be NULL"))
	}
	*(*uint64)(out) = 0
	if _, err := byBundle(p); err != nil {
		return fail(fn, err)
	}
	return fail(fn, notSupported("no USD stage is associated with the instance: this build has no OpenUSD runtime"))
}

//export ovsgo_get_path_dictionary
func ovsgo_get_path_dictionary(ctx C.uintptr_t) (dict unsafe.Pointer) {
	const fn = "get_path_dictionary"
	defer func() {
		if r := recover(); r != nil {
			fail(fn, recovered(fn, r))
			dict = nil
		}
	}()
	in, err := byContext(ctx)
	if err != nil {
		fail(fn, err)
		return nil
	}
	return unsafe.Pointer(in.dict)
}

// Which instancing function ovsgo_instancing serves (flat.c passes these).
var instancingNames = [...]string{
	"ovstage_instancing_get_instance_roots",
	"ovstage_instancing_get_prototype_root",
	"ovstage_instancing_get_prototype_roots",
}

//export ovsgo_instancing
func ovsgo_instancing(p C.uintptr_t, which C.int, arg C.uint64_t, out unsafe.Pointer) (code C.int) {
	fn := "ovstage_instancing"
	if which >= 0 && int(which) < len(instancingNames) {
		fn = instancingNames[which]
	}
	defer guard(fn, &code)
	if _, err := out64(out, "the out pointer"); err != nil {
		return fail(fn, err)
	}
	if _, err := byBundle(p); err != nil {
		return fail(fn, err)
	}
	return fail(fn, notSupported("USD instancing is not in this build: ovstage-go has no OpenUSD runtime, "+
		"so no instanced USD content is ever populated"))
}
