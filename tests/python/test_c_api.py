"""libovstage.so, the C library, through its C API (docs/c-api.md).

``make libovstage`` builds build/lib/libovstage.so and copies the headers to build/include.
This module (re)builds it, checks that it exports exactly the 53 functions of the ABI table
(tests/abi/layout.json), then compiles tests/c/capi_test.c against build/include with
``-Wall -Wextra -Werror`` and runs it with a timeout: the C test prints one line per test and
``N passed, N failed``.

Running the same C tests under AddressSanitizer (library and test instrumented) is
``make capi-asan``; it is not part of ``make test`` because the instrumented build of the Go
runtime takes minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "build" / "lib" / "libovstage.so"
INCLUDE = REPO / "build" / "include"
C_TEST = REPO / "tests" / "c" / "capi_test.c"
CC = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
MAKE = shutil.which("make")
NM = shutil.which("nm")
C_FLAGS = ["-std=c11", "-D_GNU_SOURCE", "-g", "-Wall", "-Wextra", "-Werror"]

pytestmark = pytest.mark.skipif(
    CC is None or MAKE is None, reason="needs a C compiler and make (set CC)"
)


@pytest.fixture(scope="module")
def library() -> Path:
    """build/lib/libovstage.so, rebuilt so it matches this checkout (Go's cache keeps it quick)."""
    env = dict(os.environ)
    env.setdefault("GO", shutil.which("go") or "go")
    proc = subprocess.run(
        [MAKE, "-s", "libovstage"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"make libovstage failed:\n{proc.stdout}{proc.stderr}"
    assert LIB.is_file() and (INCLUDE / "ovstage" / "ovstage.h").is_file()
    return LIB


@pytest.fixture(scope="module")
def c_test(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = tmp_path_factory.mktemp("capi") / "capi_test"
    cmd = [
        str(CC),
        *C_FLAGS,
        f"-I{INCLUDE}",
        str(C_TEST),
        f"-L{library.parent}",
        "-lovstage",
        "-lpthread",
        f"-Wl,-rpath,{library.parent}",
        "-o",
        str(exe),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"building the C tests failed:\n{proc.stdout}{proc.stderr}"
    return exe


@pytest.mark.skipif(NM is None, reason="needs nm")
def test_library_exports_exactly_the_api(library: Path) -> None:
    table = json.loads((REPO / "tests" / "abi" / "layout.json").read_text())
    want = {entry[0] for entry in table["functions"]}
    assert len(want) == 53
    out = subprocess.run(
        [str(NM), "-D", "--defined-only", str(library)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert exported == want, f"missing {sorted(want - exported)}, extra {sorted(exported - want)}"
    soname = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    if soname:
        assert "Library soname: [libovstage.so]" in soname


def test_c_api(c_test: Path) -> None:
    env = dict(os.environ, OVSTAGE_TEST_HOOKS="1")
    proc = subprocess.run(
        [str(c_test)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    output = proc.stdout + proc.stderr
    summary = re.search(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.MULTILINE)
    assert summary is not None, f"no summary line (exit {proc.returncode}):\n{output}"
    passed, failed = int(summary.group(1)), int(summary.group(2))
    assert failed == 0 and proc.returncode == 0, output
    assert passed >= 28, output
