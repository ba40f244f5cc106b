#!/usr/bin/env bash
# Builds tests/gpu/bundle/: everything tests/gpu/run_gpu_checks.py needs on a GPU machine that
# has Python 3.12 (+ torch, cupy) but no Go toolchain and no network. Run on the CPU machine:
# `make gpu-bundle`. Then, on the GPU machine: `python3 tests/gpu/bundle/run_gpu_checks.py`.
#
#   bin/*.test     Go test binaries built with -tags gpu (real-GPU tests enabled)
#   site/ovstage/  the Python package with a cp312 build of the extension
#   tests/, examples/, core/cuda/testdata/   the CPU pytest suite (run when pytest is there)
#   run_gpu_checks.py, README.txt
#
# Python 3.12 is looked for as $PY312, python3.12 on PATH, pyenv's versions, then uv's. When
# none is found, the extension is built for $PYTHON instead and the bundle says so (a cp312
# machine cannot load it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUNDLE=tests/gpu/bundle
MAX_MB=${MAX_MB:-60}
GO=${GO:-go}
PYTHON=${PYTHON:-python3}

is_py312() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }

find_py312() {
	local c
	for c in "${PY312:-}" "$(command -v python3.12 2>/dev/null || true)"; do
		if is_py312 "$c"; then echo "$c"; return 0; fi
	done
	if command -v pyenv >/dev/null 2>&1; then
		for c in "$(pyenv root)"/versions/3.12*/bin/python3.12; do
			if is_py312 "$c"; then echo "$c"; return 0; fi
		done
	fi
	if command -v uv >/dev/null 2>&1; then
		c=$(uv python find 3.12 2>/dev/null || true)
		if is_py312 "$c"; then echo "$c"; return 0; fi
	fi
	return 1
}

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/site"

echo "== Go test binaries (-tags gpu)"
export CGO_ENABLED=1
for pkg in core/cuda core; do
	name=$(basename "$pkg")
	"$GO" test -c -tags gpu -ldflags='-s -w' -o "$BUNDLE/bin/$name.test" "./$pkg"
done

echo "== extension"
TARGET_NOTE="cp312"
if PY=$(find_py312); then
	echo "Python 3.12: $PY"
	INCLUDE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	if [ ! -f "$INCLUDE/Python.h" ]; then
		echo "error: $PY has no headers ($INCLUDE/Python.h is missing); install the python3.12 dev headers" >&2
		exit 1
	fi
else
	PY=$(command -v "$PYTHON")
	TARGET_NOTE="$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")') (NO Python 3.12 found: set PY312=/path/to/python3.12)"
	echo "warning: no Python 3.12 found (PY312, python3.12, pyenv, uv); building for $PY instead" >&2
fi
rm -rf build/gpu-bundle-wheel
WHEEL=$(PYTHON="$PY" bash tools/build_wheel.sh --no-repair build/gpu-bundle-wheel | tail -n 1)
"$PY" - "$BUNDLE/site" "$WHEEL" <<'PYEOF'
import sys, zipfile
dest, wheel = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith("ovstage/")]
    z.extractall(dest, members)
print(f"{wheel}: {len(members)} files into {dest}")
PYEOF

echo "== checks and the CPU suite"
cp tests/gpu/run_gpu_checks.py "$BUNDLE/"
mkdir -p "$BUNDLE/tests" "$BUNDLE/core/cuda/testdata" "$BUNDLE/examples"
cp -r tests/python tests/cuda_isolated "$BUNDLE/tests/"
cp core/cuda/testdata/fakecuda.c "$BUNDLE/core/cuda/testdata/"
cp -r examples/python "$BUNDLE/examples/"
cp pyproject.toml README.md "$BUNDLE/"  # pytest settings; the README tour is a test
find "$BUNDLE" -name __pycache__ -prune -exec rm -rf {} +
cat > "$BUNDLE/README.txt" <<TXT
ovstage-go GPU bundle, built $(date -u +%Y-%m-%dT%H:%MZ) from $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')
extension: $TARGET_NOTE; glibc >= 2.34 needed (built on $(ldd --version | head -n1 | awk '{print $NF}'))
run: python3 run_gpu_checks.py        (Python 3.12 with torch >= 2.9 and cupy)
TXT

SIZE_KB=$(du -sk "$BUNDLE" | cut -f1)
echo "== $BUNDLE: $((SIZE_KB / 1024)) MiB ($TARGET_NOTE)"
du -sh "$BUNDLE"/bin/* "$BUNDLE"/site/ovstage/_native/*.so
if [ "$SIZE_KB" -gt $((MAX_MB * 1024)) ]; then
	echo "error: the bundle is larger than $MAX_MB MiB" >&2
	exit 1
fi
