#!/usr/bin/env bash
# Tests a built sdist as a source user gets it: `bash tools/test_sdist.sh dist/ovstage*-*.tar.gz`
# (CI runs it after `make sdist`, which checks the sdist's file list: tools/check_sdist.py).
#
# 1. A fresh venv gets the sdist (pip builds the extension from it with Go, outside git, so
#    the build identity can only come from the sdist's BUILD_IDENTITY stamp) and pytest.
# 2. From the unpacked sdist (its own tests and examples, not the checkout's): python -m
#    ovstage must report this checkout's identity, the minimal example runs, and a few test
#    modules run (the stage basics, read groups, the install's layout and report).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}
[ $# -eq 1 ] || { echo "usage: tools/test_sdist.sh SDIST" >&2; exit 2; }
SDIST=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ovstage-sdist-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "== fresh venv $WORK/venv: the sdist, built from source"
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$SDIST" pytest hypothesis
mkdir "$WORK/src"
tar -xzf "$SDIST" -C "$WORK/src" --strip-components=1

cd "$WORK/src"
export PATH="$WORK/venv/bin:$PATH"
echo "== python -m ovstage"
python -m ovstage
python "$ROOT/tools/build_identity.py" --check-installed "$ROOT"
echo "== the minimal example"
python -W error::ResourceWarning examples/python/minimal/main.py
echo "== a few test modules from the sdist"
python -m pytest -q -p no:cacheprovider -W error::ResourceWarning \
	tests/python/test_stage_basics.py tests/python/test_read_groups.py \
	tests/python/test_main.py tests/python/test_installed_layout.py \
	tests/python/test_build_identity.py
cd "$ROOT"
