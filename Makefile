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
