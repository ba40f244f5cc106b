# The few commands people type. Each target installs what it needs, so any of them works
# first on a fresh machine (Go per go.mod, gcc, Python >= 3.10 with pip, package registries).
PYTHON ?= python3
GO ?= go
PIP := $(PYTHON) -m pip

export PIP_ROOT_USER_ACTION := ignore
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint build install clean gpu-bundle libovstage capi-asan

# Editable install with the test tools; (re)builds the Go extension with gopy.
install:
	$(PIP) install -e '.[test]'

build:
	$(PIP) install -e .

demo: install
	$(PYTHON) examples/python/minimal/main.py

# The C library (docs/c-api.md): build/lib/libovstage.so exporting exactly the 53 functions of
# the C API (capi/exports.map), and the headers copied to build/include/. Rebuilt when a Go or C
# source it is made from changes; the build identity ovstage_get_build_info reports comes from git.
LIB_SOURCES := $(shell find capi abi lifecycle core internal include \
	\( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' \) -not -name '*_test.go') go.mod
LIB_GIT_HASH := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LIB_GIT_BRANCH := $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo local)
LIB_LDFLAGS := -X main.gitHash=$(LIB_GIT_HASH) -X main.gitBranch=$(LIB_GIT_BRANCH) \
	-extldflags '-Wl,--version-script=$(CURDIR)/capi/exports.map -Wl,-soname,libovstage.so'

libovstage: build/lib/libovstage.so

build/lib/libovstage.so: $(LIB_SOURCES)
	@mkdir -p build/lib build/include
	$(GO) build -buildvcs=false -buildmode=c-shared -ldflags "$(LIB_LDFLAGS)" -o $@ ./capi
	@rm -f build/lib/libovstage.h  # cgo's header of the Go exports, not the API
	rm -rf build/include && cp -R include build/include

# The C tests (tests/c) under AddressSanitizer and UBSan, leak checking on, against a library
# built with `go build -asan` (its Go and C code instrumented). Not part of `make test`: the
# first run rebuilds the Go runtime instrumented (minutes).
CC ?= cc
capi-asan:
	@mkdir -p build/asan
	$(GO) build -buildvcs=false -asan -buildmode=c-shared -ldflags "$(LIB_LDFLAGS)" -o build/asan/libovstage.so ./capi
	$(CC) -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror -fsanitize=address,undefined \
		-fno-sanitize-recover=all -Iinclude tests/c/capi_test.c -Lbuild/asan -lovstage -lpthread \
		-Wl,-rpath,$(CURDIR)/build/asan -o build/asan/capi_test
	OVSTAGE_TEST_HOOKS=1 timeout 600 build/asan/capi_test

# Handles a test forgets to release fail the suite (-W error::ResourceWarning).
test: install libovstage
	$(GO) vet ./...
	$(GO) test -race ./...
	$(PYTHON) -m pytest -q -W error::ResourceWarning tests/python

# bench_async.py also runs the Go enqueue benchmark (go test -bench) and prints every target.
bench: install
	$(PYTHON) tests/bench/bench_foundation.py
	$(PYTHON) tests/bench/bench_async.py

lint:
	$(PIP) install -q ruff
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path './build/*' \
		-not -path '*/_*' -not -path '*/testdata/*'); \
	bad=$$(gofmt -l $$files); \
	if [ -n "$$bad" ]; then echo "gofmt needed on:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(PYTHON) -m ruff check python tests examples

# What a GPU machine (Python 3.12 + torch + cupy, no Go, no network) needs to run every GPU check:
# Go test binaries with -tags gpu, a cp312 build of the extension, the checks. See tests/gpu/.
gpu-bundle:
	PYTHON=$(PYTHON) GO=$(GO) bash tools/build_gpu_bundle.sh

clean:
	rm -rf build dist python/*.egg-info python/ovstage/_native tests/gpu/bundle

# ---- reliability (issue 7); none of these run in CI --------------------------------------
.PHONY: fuzz stress leakcheck cgocheck

FUZZTIME ?= 20s
FUZZ_TARGETS := ./core:FuzzWriteAttribute ./core/pathdict:FuzzPathDictionary ./abi:FuzzFromAddress

# Each fuzz target for $(FUZZTIME) (their committed seed corpora also run in every `go test`).
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

# 8 threads x 30 s against one stage, verified against the model
# (OVSTAGE_STRESS_THREADS / OVSTAGE_STRESS_SECONDS to change).
stress: install
	$(PYTHON) tests/stress/stress.py

# RSS and live-object growth over 1,000,000 write cycles and 100,000 read/export cycles
# (OVSTAGE_LEAK_WRITES / OVSTAGE_LEAK_READS to scale down), then RSS and tracked ops over
# 1,000,000 fire-and-forget writes whose Operations are dropped (OVSTAGE_FAF_WRITES).
leakcheck: install
	$(PYTHON) tests/leak/leakcheck.py
	$(PYTHON) tests/leak/fire_and_forget.py

# Go tests and the pytest suite with cgo pointer checks at their strictest (cgocheck2),
# the extension rebuilt likewise. `make install` restores a normal build.
cgocheck:
	GOEXPERIMENT=cgocheck2 $(PIP) install -e '.[test]'
	$(GO) version -m python/ovstage/_native/_native*.so | grep -q 'GOEXPERIMENT=cgocheck2' \
		|| { echo "the extension was not built with cgocheck2"; exit 1; }
	GOEXPERIMENT=cgocheck2 $(GO) test ./...
	$(PYTHON) -m pytest -q -W error::ResourceWarning tests/python
