// Package fakecuda builds the fake CUDA driver (core/cuda/testdata/fakecuda.c) for tests that
// exercise the GPU code paths on machines without a GPU. It needs a C compiler (cc or gcc).
package fakecuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Source is the path of the fake driver's C source.
func Source() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "core", "cuda", "testdata", "fakecuda.c")
}

var (
	once  sync.Once
	built string
	err   error
)

// Build compiles the fake driver once per process into a temporary directory and returns the
// shared library's path.
func Build() (string, error) {
	once.Do(func() {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
			if _, e := exec.LookPath(cc); e != nil {
				cc = "gcc"
			}
		}
		dir, e := os.MkdirTemp("", "ovstage-fakecuda-")
		if e != nil {
			err = e
			return
		}
		out := filepath.Join(dir, "libfakecuda.so")
		cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", out, Source(), "-lpthread")
		if msg, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("building the fake CUDA driver with %s: %v\n%s", cc, e, msg)
			return
		}
		built = out
	})
	return built, err
}
