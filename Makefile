# The few commands people type. Each target installs what it needs, so any of them works
# first on a fresh machine (Go per go.mod, gcc, Python >= 3.10 with pip, package registries).
PYTHON ?= python3
GO ?= go
PIP := $(PYTHON) -m pip

export PIP_ROOT_USER_ACTION := ignore
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint build install clean gpu-bundle libovstage capi-asan install-c wheel \
	sdist

# Editable install with the test tools; (re)builds the Go extension with gopy.
install:
	$(PIP) install -e '.[test]'

build:
	$(PIP) install -e .

demo: install
	$(PYTHON) examples/python/minimal/main.py

# The C library (docs/c-api.md): build/lib/libovstage.so exporting exactly the 53 functions of
# the C API (capi/exports.map), and the headers copied to build/include/. Rebuilt when a Go or C
# source it is made from changes. The build identity ovstage_get_build_info reports comes from
# git, or from an sdist's stamp (tools/build_identity.py, which setup.py uses for the extension).
LIB_SOURCES := $(shell find capi abi lifecycle core internal include \
	\( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' \) -not -name '*_test.go') go.mod
LIB_IDENTITY := $(shell $(PYTHON) tools/build_identity.py)
LIB_GIT_BRANCH := $(or $(word 1,$(LIB_IDENTITY)),local)
LIB_GIT_HASH := $(or $(word 2,$(LIB_IDENTITY)),unknown)
ABI_PKG := github.com/ovstage-go/ovstage/abi
LIB_LDFLAGS := -X $(ABI_PKG).gitHash=$(LIB_GIT_HASH) -X $(ABI_PKG).gitBranch=$(LIB_GIT_BRANCH) \
	-extldflags '-Wl,--version-script=$(CURDIR)/capi/exports.map -Wl,-soname,libovstage.so'

# Beside it, the files C and C++ projects find it with: build/lib/pkgconfig/ovstage.pc (prefix:
# build/) and the CMake package build/lib/cmake/ovstage/ (find_package(ovstage) -> target
# ovstage::ovstage), made from capi/package/. The version is the headers' OVSTAGE_VERSION_*.
version_part = $(shell sed -n 's/^.define OVSTAGE_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' include/ovstage/ovstage_types.h)
C_VERSION_MAJOR := $(call version_part,MAJOR)
C_VERSION_MINOR := $(call version_part,MINOR)
C_VERSION := $(C_VERSION_MAJOR).$(C_VERSION_MINOR).$(call version_part,PATCH)
C_PACKAGE_FILES := build/lib/pkgconfig/ovstage.pc build/lib/cmake/ovstage/ovstageConfig.cmake \
	build/lib/cmake/ovstage/ovstageConfigVersion.cmake

# $(call fill_template,TEMPLATE,OUTPUT,PREFIX): the template with its @...@ fields filled in.
define fill_template
	@mkdir -p $(dir $(2))
	sed -e 's|@PREFIX@|$(3)|g' -e 's|@VERSION@|$(C_VERSION)|g' \
		-e 's|@VERSION_MAJOR@|$(C_VERSION_MAJOR)|g' -e 's|@VERSION_MINOR@|$(C_VERSION_MINOR)|g' \
		$(1) > $(2).tmp && mv $(2).tmp $(2)
endef

libovstage: build/lib/libovstage.so $(C_PACKAGE_FILES)

build/lib/pkgconfig/ovstage.pc: capi/package/ovstage.pc.in include/ovstage/ovstage_types.h
	$(call fill_template,$<,$@,$(CURDIR)/build)

build/lib/cmake/ovstage/ovstageConfigVersion.cmake: capi/package/ovstageConfigVersion.cmake.in \
		include/ovstage/ovstage_types.h
	$(call fill_template,$<,$@,)

build/lib/cmake/ovstage/ovstageConfig.cmake: capi/package/ovstageConfig.cmake
	@mkdir -p $(dir $@)
	cp $< $@

# $(call install_c_files,DIR,PC_PREFIX): the library, its headers, ovstage.pc (prefix:
# PC_PREFIX) and the CMake package under DIR: lib/, include/, lib/pkgconfig/, lib/cmake/ovstage/.
define install_c_files
	install -d $(1)/lib/pkgconfig $(1)/lib/cmake/ovstage $(1)/include
	install -m 0755 build/lib/libovstage.so $(1)/lib/libovstage.so
	cp -R build/include/. $(1)/include/
	$(call fill_template,capi/package/ovstage.pc.in,$(1)/lib/pkgconfig/ovstage.pc,$(2))
	install -m 0644 build/lib/cmake/ovstage/ovstageConfig.cmake \
		build/lib/cmake/ovstage/ovstageConfigVersion.cmake $(1)/lib/cmake/ovstage/
endef

# Installs the C files under $(DESTDIR)$(PREFIX), ovstage.pc's prefix being PREFIX.
PREFIX ?= /usr/local
install-c: libovstage
	@case '$(PREFIX)' in /*) ;; *) echo "install-c: PREFIX must be an absolute path"; exit 1;; esac
	$(call install_c_files,$(DESTDIR)$(PREFIX),$(PREFIX))

# The platform wheel (tools/build_wheel.sh): the Python package, the extension and the C files
# inside the package (ovstage/lib, ovstage/include), repaired to a manylinux tag, in dist/.
# Inside the wheel ovstage.pc finds its prefix from its own place (${pcfiledir}), as the CMake
# package does, so an installed wheel's files work wherever pip put them.
WHEEL_C_FILES := build/wheel-c
wheel: libovstage
	rm -rf $(WHEEL_C_FILES)
	$(call install_c_files,$(WHEEL_C_FILES),$${pcfiledir}/../..)
	PYTHON=$(PYTHON) bash tools/build_wheel.sh --c-files $(WHEEL_C_FILES) dist

# The source distribution (tools/build_wheel.sh --sdist), in dist/: the tree git tracks, with
# the commit's identity stamped in (BUILD_IDENTITY); checked by tools/check_sdist.py.
sdist:
	PYTHON=$(PYTHON) bash tools/build_wheel.sh --sdist dist

# The identity the library was linked with: rewritten only when it changes, so a commit that
# touches no source still relinks the library with its new hash.
build/identity: FORCE
	@mkdir -p build
	@echo '$(LIB_IDENTITY)' | cmp -s - $@ || echo '$(LIB_IDENTITY)' > $@
.PHONY: FORCE

build/lib/libovstage.so: $(LIB_SOURCES) build/identity
	@mkdir -p build/lib build/include
	$(GO) build -buildvcs=false -buildmode=c-shared -ldflags "$(LIB_LDFLAGS)" -o $@ ./capi
	@rm -f build/lib/libovstage.h  # cgo's header of the Go exports, not the API
	rm -rf build/include && cp -R include build/include

# The C tests (tests/c) and the C examples (examples/c) under AddressSanitizer and UBSan, leak
# checking on, against a library built with `go build -asan` (its Go and C code instrumented).
# Not part of `make test`: the first run rebuilds the Go runtime instrumented (minutes).
CC ?= cc
C_EXAMPLES := minimal write-flavors producer-consumer
ASAN_CFLAGS := -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror -fsanitize=address,undefined \
	-fno-sanitize-recover=all -Iinclude
ASAN_LDFLAGS := -Lbuild/asan -lovstage -lpthread -Wl,-rpath,$(CURDIR)/build/asan
capi-asan:
	@mkdir -p build/asan
	$(GO) build -buildvcs=false -asan -buildmode=c-shared -ldflags "$(LIB_LDFLAGS)" -o build/asan/libovstage.so ./capi
	$(CC) $(ASAN_CFLAGS) tests/c/capi_test.c $(ASAN_LDFLAGS) -o build/asan/capi_test
	OVSTAGE_TEST_HOOKS=1 timeout 600 build/asan/capi_test
	@for e in $(C_EXAMPLES); do \
		echo "== examples/c/$$e"; \
		$(CC) $(ASAN_CFLAGS) examples/c/$$e/main.c $(ASAN_LDFLAGS) -o build/asan/$$e || exit 1; \
		timeout 300 build/asan/$$e > /dev/null || exit 1; \
	done

# Handles a test forgets to release fail the suite (-W error::ResourceWarning).
test: install libovstage
	$(GO) vet ./...
	$(GO) test -race ./...
	$(PYTHON) -m pytest -q -W error::ResourceWarning tests/python

# bench_async.py also runs the Go enqueue benchmark (go test -bench) and prints every target;
# bench_c_api.py prints the C API's figures (tests/bench/bench_c.c) beside the Python ones;
# bench_population.py populates a generated 100k-prim USD scene (OVSTAGE_BENCH_POPULATION_PRIMS
# to change) against usd-core reading the same attributes, and prints the engine's share of the
# memory (also from Go: core/mem_population_test.go).
# bench_scaling.py measures the figures whose cost must grow with the work, not the stage;
# bench_step.py a producer's write+wait+seal+read step (and the Isaac-style one vs numpy.copyto);
# bench_threads.py reads/s from 1/2/4 threads and a writer's loss with 2 readers; bench_chart.py
# draws cost against prims and attributes (build/bench/scaling.png, matplotlib from the bench
# extra). run_all.py runs them all and prints one table of every figure, its limit and the verdict.
bench: install libovstage
	$(PIP) install -q -e '.[test,bench]'
	$(PYTHON) tests/bench/run_all.py

lint:
	$(PIP) install -q ruff
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path './build/*' \
		-not -path '*/_*' -not -path '*/testdata/*'); \
	bad=$$(gofmt -l $$files); \
	if [ -n "$$bad" ]; then echo "gofmt needed on:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(PYTHON) -m ruff check python tests examples tools

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
