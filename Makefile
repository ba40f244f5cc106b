# The few commands people type. Each target installs what it needs, so any of them works
# first on a fresh machine (Go per go.mod, gcc, Python >= 3.10 with pip, package registries).
PYTHON ?= python3
GO ?= go
PIP := $(PYTHON) -m pip

export PIP_ROOT_USER_ACTION := ignore
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint build install clean gpu-bundle

# Editable install with the test tools; (re)builds the Go extension with gopy.
install:
	$(PIP) install -e '.[test]'

build:
	$(PIP) install -e .

demo: install
	$(PYTHON) examples/python/minimal/main.py

# Handles a test forgets to release fail the suite (-W error::ResourceWarning).
test: install
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
FUZZ_TARGETS := ./core:FuzzWriteAttribute ./core/pathdict:FuzzPathDictionary ./dlpack:FuzzFromAddress

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
