#!/usr/bin/env bash
# Tests a built wheel as a user gets it: `bash tools/test_wheel.sh dist/ovstage_go-*.whl`
# (CI runs it after `make wheel`).
#
# 1. tools/check_wheel.py: every module, header and C package file is in the wheel.
# 2. A fresh venv gets the wheel with its test extra (pip; nothing is built).
# 3. The suite's files (tests/, examples/, include/, README.md, pyproject.toml, the fake CUDA
#    driver's source) are copied to a temp dir without python/, so `import ovstage` can only
#    find the installed wheel, and a `go` that fails is first on PATH: nothing may need Go.
# 4. There: python -m ovstage (its build identity must be the source tree's,
#    tools/build_identity.py), the minimal example, then the whole Python suite (its C tests
#    compile against the wheel's headers and link its library, c_build.INSTALLED).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}
[ $# -eq 1 ] || { echo "usage: tools/test_wheel.sh WHEEL" >&2; exit 2; }
WHEEL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

echo "== wheel contents"
"$PYTHON" tools/check_wheel.py "$WHEEL"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ovstage-wheel-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "== fresh venv $WORK/venv"
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL[test]"

mkdir -p "$WORK/src/core/cuda" "$WORK/src/tools" "$WORK/nogo"
cp -R tests examples include README.md pyproject.toml "$WORK/src/"
cp tools/build_identity.py "$WORK/src/tools/"
cp -R core/cuda/testdata "$WORK/src/core/cuda/"
find "$WORK/src" \( -name __pycache__ -o -name .pytest_cache \) -prune -exec rm -rf {} +
cat > "$WORK/nogo/go" <<'SH'
#!/bin/sh
echo "go $*: an installed wheel must not need the Go toolchain" >&2
exit 1
SH
chmod +x "$WORK/nogo/go"

cd "$WORK/src"
export PATH="$WORK/nogo:$WORK/venv/bin:$PATH"
export GO="$WORK/nogo/go"
echo "== python -m ovstage"
python -m ovstage
python - "$WORK/venv" <<'PYEOF'
import sys
from pathlib import Path

import ovstage

venv = Path(sys.argv[1]).resolve()
where = Path(ovstage.__file__).resolve()
assert venv in where.parents, f"ovstage imported from {where}, not the wheel in {venv}"
PYEOF
# The wheel was built from this tree: its binaries carry this tree's identity (both of them:
# test_build_identity.py checks the C library says what the extension says).
python "$ROOT/tools/build_identity.py" --check-installed "$ROOT"
echo "== the minimal example"
python -W error::ResourceWarning examples/python/minimal/main.py
echo "== the Python suite against the wheel"
python -m pytest -q -p no:cacheprovider -W error::ResourceWarning tests/python
cd "$ROOT"
