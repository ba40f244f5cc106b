//go:build tools

// Package tools pins the build tools (gopy, goimports) in go.mod so the
// Python build hook can `go build` them at the exact versions we test with.
package tools

import (
	_ "github.com/go-python/gopy"
	_ "golang.org/x/tools/cmd/goimports"
)
