"""Checks what a built wheel holds against the source tree: ``python tools/check_wheel.py WHEEL``.

Every module of python/ovstage and every header of include/ must be in it, with the files
nothing imports but users and build systems need (the extension, the facade stub, py.typed,
libovstage.so, ovstage.pc, the CMake package); no Python module may be in it that the source
tree no longer has (a stale build/lib.* copy). Exits 1 naming each problem.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = [
    "ovstage/py.typed",
    "ovstage/_native/__init__.py",
    "ovstage/_native/pybind.py",
    "ovstage/_native/pybind.pyi",
    "ovstage/_native/go.py",
    "ovstage/lib/libovstage.so",
    "ovstage/lib/pkgconfig/ovstage.pc",
    "ovstage/lib/cmake/ovstage/ovstageConfig.cmake",
    "ovstage/lib/cmake/ovstage/ovstageConfigVersion.cmake",
]


def problems(wheel: Path) -> list[str]:
    """What is missing from the wheel, or in it without a source."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    package = ROOT / "python"
    sources = {p.relative_to(package).as_posix() for p in (package / "ovstage").rglob("*.py")}
    sources -= {n for n in sources if n.startswith("ovstage/_native/")}  # generated at build
    headers = {
        "ovstage/include/" + p.relative_to(ROOT / "include").as_posix()
        for p in (ROOT / "include").rglob("*.h")
    }
    found = []
    for name in sorted(sources | headers | set(REQUIRED)):
        if name not in names:
            found.append(f"missing: {name}")
    if not any(n.startswith("ovstage/_native/_native.") and n.endswith(".so") for n in names):
        found.append("missing: the extension ovstage/_native/_native.*.so")
    stale = {
        n for n in names if n.endswith(".py") and n.startswith("ovstage/") and n not in sources
    }
    for name in sorted(stale):
        if not name.startswith("ovstage/_native/"):
            found.append(f"no source in python/: {name}")
    return found


def report(argv: list[str], usage: str, check: Callable[[Path], list[str]], fine: str) -> int:
    """Run ``check`` on the file named by argv[1] and print each problem it finds, or
    ``fine``; the exit status (2: usage, 1: problems). Shared with tools/check_sdist.py."""
    if len(argv) != 2:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    found = check(Path(argv[1]))
    for line in found:
        print(f"{argv[1]}: {line}", file=sys.stderr)
    if not found:
        print(f"{argv[1]}: {fine}")
    return 1 if found else 0


def main(argv: list[str]) -> int:
    """Check the wheel named by argv[1]; print each problem."""
    return report(
        argv,
        "python tools/check_wheel.py WHEEL",
        problems,
        "holds every module, header and C package file",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
