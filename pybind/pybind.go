// Package pybind is the gopy facade over core (see API.md). Placeholder: real bodies land next.
package pybind

import "fmt"

func notYet(name string) error { return fmt.Errorf("[ovstage:6] %s: not implemented yet", name) }

// LibraryVersion returns the compatibility version "major.minor.patch".
func LibraryVersion() (string, error) { return "0.2.1", nil }

// CreateStage creates a stage and returns its id.
func CreateStage(name string) (uint64, error) { return 0, notYet("CreateStage") }
